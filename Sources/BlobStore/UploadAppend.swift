import BlobCatalog
import BlobContent
import BlobCore
import Synchronization

import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// One request's worth of bytes appended to a resumable upload. `finish` saves them (and
/// completes the blob at its last byte); `abandon` keeps what arrived when the client went away;
/// any failure rolls back to the offset the request started at. A newer request of the same
/// upload may `preempt` it from another thread: then it ends as if its client had gone.
///
/// `@unchecked Sendable` is sound: every method runs under `lock`, so the request's thread and a
/// preempting one never touch the writer or the record at once.
public final class UploadAppend: Preemptible, @unchecked Sendable {
    /// A per-request checksum (tus Upload-Checksum).
    public enum Checksum: Sendable {
        case sha1([UInt8])
        case sha256([UInt8])
    }

    private let store: BlobStore
    private var record: UploadRecord
    private let startOffset: UInt64
    /// When this node last renewed its claim on the upload (in a cluster).
    private var claimRenewed: Int64
    private let writer: HashingFileWriter
    /// This request's Upload-Checksum, fed by the `BodyHasher` (on its thread for a large body).
    private let checksum: RequestChecksum?
    private var ended = false
    /// What the blob's commit requires (create only, for a caller with `create`).
    private let condition: WriteCondition
    /// The events reporting the blob's commit, if any subscription wants them.
    private let events: EventDraft?
    /// Set when a newer request stopped this one: whether the bytes it had were kept.
    private var preemptedKeeping: Bool?
    /// What else stops the request when it is preempted (its connection is shut down).
    private var onPreempt: (@Sendable () -> Void)?
    private let lock = Mutex(())

    /// `expected`: the bytes this request is expected to bring, when known (the least of what
    /// the upload still lacks and the request's length). The SHA-256 goes on from `hasher` on a
    /// second thread for 1 MiB and more (`BodyHasher`), with `checksum` (tus Upload-Checksum).
    init(store: BlobStore, record: UploadRecord, descriptor: FileDescriptor, hasher: SHA256Hasher, expected: UInt64?,
         checksum: Checksum?, condition: WriteCondition, events: EventDraft?) {
        self.store = store
        self.events = events
        self.condition = condition
        self.record = record
        self.startOffset = record.offset
        self.claimRenewed = store.now()
        let checksum = checksum.map(RequestChecksum.init)
        self.checksum = checksum
        let bodyHasher = BodyHasher(md5: false, extra: checksum.map { checksum in { checksum.update($0) } }, expectedSize: expected,
                                    resuming: hasher)
        self.writer = HashingFileWriter(descriptor: descriptor, size: record.offset, expecting: expected, bodyHasher: bodyHasher)
    }

    deinit { abandon() }

    /// The upload as it stands (offset includes bytes of this request).
    public var upload: UploadRecord {
        lock.withLock { _ in
            var current = record
            current.offset = writer.size
            return current
        }
    }

    /// True when the bytes so far reach the upload's length: `finish` will commit its blob.
    public var reachesLength: Bool {
        lock.withLock { _ in record.length.map { writer.size == $0 } ?? false }
    }

    /// Checks this request's Upload-Checksum over every byte written (a pre-finish hook is asked
    /// only about verified bytes); `finish` checks it again.
    public func verify() throws(StoreError) {
        try lock.withLock { _ throws(StoreError) in
            guard let checksum, !ended else { return }
            try writer.flush()
            _ = writer.sha256SoFar
            guard checksum.matches() else { throw .checksumMismatch }
        }
    }

    /// Runs `action` too when a newer request preempts this one (it shuts the connection down).
    public func whenPreempted(_ action: @escaping @Sendable () -> Void) {
        lock.withLock { _ in onPreempt = action }
    }

    /// Appends bytes; throws `.tooLarge` past the upload's length (or the size limit), and
    /// `.uploadBusy` once a newer request has taken the upload over.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(StoreError) {
        try lock.withLock { _ throws(StoreError) in
            guard !ended else { throw .uploadBusy }
            if let limit = record.length ?? store.options.maxBlobSize, writer.size + UInt64(bytes.count) > limit {
                throw .tooLarge(limit: limit)
            }
            try writer.write(bytes)
            if store.isShared {
                let now = store.now()
                if now - claimRenewed >= BlobStore.claimLease / 3 {
                    claimRenewed = now
                    store.renewUploadClaim(record.id)
                }
            }
        }
    }

    /// Every byte of the request is in: verifies the checksum, makes the bytes durable and saves
    /// the new offset; at the last byte, commits the blob. On failure nothing of this request
    /// stays. After a preemption: the upload as the preemption saved it, or `.uploadBusy`.
    public func finish() throws(StoreError) -> UploadRecord {
        try lock.withLock { _ throws(StoreError) in
            if let kept = preemptedKeeping {
                guard kept else { throw .uploadBusy }
                return record
            }
            guard !ended else { throw .uploadBusy }
            defer { end() }
            do throws(StoreError) {
                if let checksum {
                    // Every byte written out and hashed, the checksum's included.
                    try writer.flush()
                    _ = writer.sha256SoFar
                    guard checksum.matches() else { throw .checksumMismatch }
                }
                try save()
                return record
            } catch {
                rollback()
                throw error
            }
        }
    }

    /// Drops this request's bytes (the request failed before `finish`). Idempotent.
    public func cancel() {
        lock.withLock { _ in
            guard !ended else { return }
            rollback()
            end()
        }
    }

    /// The client went away mid-request: keep the bytes that arrived, unless a checksum was
    /// promised (then they cannot be verified and are dropped). Idempotent.
    public func abandon() {
        lock.withLock { _ in _ = keepOrDrop() }
    }

    /// A newer request of this upload stops this one (from its own thread): the bytes that
    /// arrived are kept as in `abandon`, the claim is released, and the connection is shut down.
    public func preempt() {
        let action = lock.withLock { _ -> (@Sendable () -> Void)? in
            guard !ended else { return nil }
            preemptedKeeping = keepOrDrop()
            return onPreempt
        }
        action?()
    }

    /// Saves what arrived (or drops it when a checksum was promised) and ends; true if kept.
    private func keepOrDrop() -> Bool {
        guard !ended else { return false }
        defer { end() }
        if checksum == nil {
            do throws(StoreError) {
                try save()
                return true
            } catch {
                store.logger.warning("Cannot keep what arrived of a resumable upload", metadata: [
                    "upload.id": "\(record.id)", "error": "\(error)",
                ])
            }
        }
        rollback()
        return false
    }

    /// fsync, then save the offset and hash state, or commit the blob if this was the last byte.
    private func save() throws(StoreError) {
        try writer.sync()
        record.offset = writer.size
        record.hashState = writer.sha256SoFar.state
        if let length = record.length, record.offset == length {
            try complete()
        } else {
            try store.uploadIndex.save(record)
        }
    }

    private func complete() throws(StoreError) {
        writer.close()
        let digest = writer.sha256
        let key: BlobKey
        if let named = record.key { key = named } else { key = try BlobKey(hex(digest)) }
        // The upload's id is the blob's version: recovery can find an interrupted completion.
        let now = store.now()
        let blob = BlobRecord(key: key, version: record.id, size: record.offset, sha256: digest,
                              attributes: record.attributes, modified: now,
                              ttlExpires: BlobStore.tusTimeToLive(record.metadata).map { now + $0 })
        _ = try store.install(file: store.uploadPath(record.id), record: blob, completingUpload: record.id, if: condition, events: events)
        record.completedKey = key
    }

    /// Drops this request's bytes: the file goes back to the offset the index has.
    private func rollback() {
        writer.close()
        if record.completedKey == nil, let descriptor = try? FileSystem.open(store.uploadPath(record.id), O_WRONLY) {
            descriptor.closeAfter { try? $0.truncate(to: startOffset) }
        }
        record.offset = startOffset
    }

    private func end() {
        guard !ended else { return }
        ended = true
        writer.close()
        store.releaseUpload(record.id)
    }
}

/// A request's Upload-Checksum as its bytes are hashed. `@unchecked Sendable` is sound: the
/// `BodyHasher` updates it (on its own thread for a large body), and `matches` runs only once
/// the hasher has seen every byte.
private final class RequestChecksum: @unchecked Sendable {
    private let expected: UploadAppend.Checksum
    private var sha1 = SHA1Hasher()
    private var sha256 = SHA256Hasher()

    init(_ expected: UploadAppend.Checksum) { self.expected = expected }

    func update(_ bytes: UnsafeRawBufferPointer) {
        switch expected {
        case .sha1: sha1.update(bytes)
        case .sha256: sha256.update(bytes)
        }
    }

    func matches() -> Bool {
        switch expected {
        case .sha1(let digest): sha1.finalize() == digest
        case .sha256(let digest): sha256.finalize() == digest
        }
    }
}

import BlobCatalog
import BlobContent
import BlobCore
import Synchronization

import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// S3 multipart uploads: parts stream to `DIR/uploads/mp-ID-N-MD5` like PUT bodies (fsynced,
/// then listed in the index; the file's name carries its MD5, so a part uploaded again under the
/// same number never overwrites the file the index still names); Complete reads them in order
/// into a new blob file, computing its SHA-256 (so every blob has Repr-Digest), and commits it
/// atomically like a PUT. One Complete (or Abort) of an upload runs at a time.
extension BlobStore {
    /// The smallest part other than the last, as in S3.
    public static let minimumPartSize: UInt64 = 5 * 1024 * 1024

    /// Starts a multipart upload to `key`; `checksum` is kept for its dialect (see `MultipartUpload`),
    /// and `lock` for the version its Complete makes. `owner` (a credential or client address) may
    /// have `maxOpenUploads` unfinished uploads at most.
    public func createMultipart(key: BlobKey, attributes: BlobAttributes, lifetime: Int64, checksum: String? = nil,
                                owner: String? = nil, lock: ObjectLock? = nil) throws(StoreError) -> MultipartUpload {
        let now = self.now()
        // Idle for `lifetime` (each part moves it on), or the bucket's AbortIncompleteMultipartUpload.
        let upload = MultipartUpload(id: FileSystem.randomID(), key: key, attributes: attributes, created: now,
                                     expires: multipartDeadline(key: key, created: now, now: now, lifetime: lifetime), checksum: checksum,
                                     lock: lock)
        try multipartIndex.insertMultipart(upload, owner: owner, limit: options.maxOpenUploads)
        return upload
    }

    /// The unfinished upload `id` of `key`: `.uploadNotFound` otherwise.
    public func multipart(_ id: String, key: BlobKey) throws(StoreError) -> MultipartUpload {
        guard id.utf8.count == 32, id.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }),
              let upload = try multipartIndex.multipart(id), upload.key == key, upload.completedETag == nil else { throw .uploadNotFound }
        return upload
    }

    /// Unfinished uploads whose key starts with `prefix`.
    public func multipartUploads(prefix: [UInt8]) throws(StoreError) -> [MultipartUpload] {
        try multipartIndex.multipartUploads(prefix: prefix)
    }

    /// The parts of upload `id` so far, by number.
    public func parts(of id: String) throws(StoreError) -> [UploadedPart] {
        try multipartIndex.parts(of: id)
    }

    /// Starts part `number` (1...10000) of upload `id`; a part of that number already there is
    /// replaced when this one is saved.
    public func beginPart(of upload: MultipartUpload, number: Int, expectedSize: UInt64?,
                          expectedSHA256: [UInt8]?, hasher: BodyHasher? = nil) throws(StoreError) -> PartWriteStream {
        guard upload.completedETag == nil else { throw .uploadNotFound }
        if let expectedSize, expectedSize > sizeLimit { throw .tooLarge(limit: sizeLimit) }
        try checkFreeSpace(needed: expectedSize ?? 0)
        let temporary = "\(directory)/uploads/mp-\(upload.id)-\(number).tmp.\(FileSystem.randomID().prefix(8))"
        let descriptor = try FileSystem.open(temporary, O_WRONLY | O_CREAT | O_TRUNC)
        let stream = PartWriteStream(store: self, upload: upload.id, number: number, temporary: temporary, descriptor: descriptor,
                                     expectedSize: expectedSize, expectedSHA256: expectedSHA256, hasher: hasher)
        stream.expiry = { [self] in
            multipartDeadline(key: upload.key, created: upload.created, now: now(), lifetime: options.uploadExpiry)
        }
        // The same part sent again stops the earlier request, whose client has likely gone (see
        // `Preemptible`): it could otherwise hold its connection and file until the timeout.
        let earlier = partsInFlight.withLock { $0.updateValue(ClaimHolder(request: stream), forKey: stream.claim)?.request }
        earlier?.preempt()
        return stream
    }

    /// A part stream ended: it no longer holds its part number (unless a newer one took it).
    func partEnded(_ stream: PartWriteStream) {
        partsInFlight.withLock { parts in
            // (A holder gone already, by deinit, reads as nil.)
            if let holder = parts[stream.claim]?.request, holder !== stream { return }
            parts.removeValue(forKey: stream.claim)
        }
    }

    /// Completes upload `id` from `parts` (number and MD5, in ascending order) if `condition`
    /// holds for the key's current record. Blocks while the parts are read and committed. The
    /// upload's lock (asked for at its creation) locks the new version in the same commit.
    /// `reading` sees the object's bytes in order as they are assembled; `checksum` then gets the
    /// parts chosen and returns the object's `BlobRecord.checksum` (or throws to stop the commit).
    public func completeMultipart(_ upload: MultipartUpload, parts wanted: [(number: Int, md5: [UInt8])],
                                  reading: ((UnsafeRawBufferPointer) -> Void)? = nil,
                                  checksum: ([UploadedPart]) throws(StoreError) -> String? = { _ in nil },
                                  if condition: WriteCondition, events: EventDraft? = nil) throws(StoreError) -> (record: BlobRecord, etag: String) {
        guard try claimUpload(upload.id) else { throw .uploadBusy }
        defer { releaseUpload(upload.id) }
        guard !wanted.isEmpty else { throw .invalidPart(number: 0) }
        for (previous, next) in zip(wanted, wanted.dropFirst()) where next.number <= previous.number { throw .invalidPartOrder }
        let stored = Dictionary(try parts(of: upload.id).map { ($0.number, $0) }, uniquingKeysWith: { $1 })
        var chosen: [UploadedPart] = []
        for (index, part) in wanted.enumerated() {
            guard let found = stored[part.number], found.md5 == part.md5 else { throw .invalidPart(number: part.number) }
            if index < wanted.count - 1 && found.size < Self.minimumPartSize { throw .partTooSmall(number: part.number) }
            chosen.append(found)
        }
        let total = chosen.reduce(UInt64(0)) { $0 + $1.size }
        var etagHasher = MD5Hasher()
        for part in chosen { part.md5.withUnsafeBytes { etagHasher.update($0) } }
        let etagMD5 = etagHasher.finalize()
        let stream = try beginWrite(expectedSize: total)
        let objectChecksum: String?
        do {
            for part in chosen { try append(part, of: upload.id, to: stream, reading: reading) }
            objectChecksum = try checksum(chosen)
        } catch {
            stream.abandon()
            throw error
        }
        // The parts' checksums are kept when every part has one (an upload with a checksum algorithm).
        let partChecksums = chosen.compactMap(\.checksum)
        var condition = condition
        if condition.newLock == nil { condition.newLock = upload.lock }
        let record = try stream.commit(as: upload.key, attributes: upload.attributes, md5: etagMD5, parts: chosen.count,
                                       partSizes: chosen.map(\.size), partChecksums: partChecksums.count == chosen.count ? partChecksums : nil,
                                       checksum: objectChecksum, if: condition, events: events).record
        let etag = "\"\(hex(etagMD5))-\(chosen.count)\""
        try multipartIndex.markCompleted(upload.id, etag: etag, checksum: objectChecksum)
        for part in stored.values { FileSystem.remove(partPath(upload.id, part)) }
        return (record, etag)
    }

    /// Streams part `part` into `stream`.
    private func append(_ part: UploadedPart, of id: String, to stream: BlobWriteStream,
                        reading: ((UnsafeRawBufferPointer) -> Void)?) throws(StoreError) {
        try FileSystem.open(partPath(id, part), O_RDONLY).closeAfter { descriptor throws(StoreError) in
            try stream.write(contentsOf: descriptor, count: part.size, reading: reading)
        }
    }

    /// What a repeated Complete of `id` answers, if `id` completed into `key`: the object's ETag
    /// and checksum (`BlobRecord.checksum`) as the first Complete made them.
    public func completedMultipart(_ id: String, key: BlobKey) throws(StoreError) -> (etag: String, checksum: String?)? {
        guard let upload = try multipartIndex.multipart(id), upload.key == key, let etag = upload.completedETag else { return nil }
        return (etag, upload.checksum)
    }

    /// Removes upload `id` and its parts.
    public func abortMultipart(_ upload: MultipartUpload) throws(StoreError) {
        guard try claimUpload(upload.id) else { throw .uploadBusy }
        defer { releaseUpload(upload.id) }
        let parts = try parts(of: upload.id)
        try multipartIndex.removeMultipart(upload.id)
        for part in parts { FileSystem.remove(partPath(upload.id, part)) }
    }

    /// Removes multipart uploads past their expiry (and completed ones past theirs); returns how many.
    @discardableResult
    public func removeExpiredMultipartUploads() -> Int {
        let removed = sweepExpired("multipart upload", { () throws(StoreError) in
            try multipartIndex.expiredMultipartUploads(now: now())
        }) { id throws(StoreError) in
            // nil: gone meanwhile, or a row whose key fails validation (the index reports it).
            guard let upload = try multipartIndex.multipart(id) else { return false }
            do throws(StoreError) {
                try abortMultipart(upload)
            } catch .uploadBusy {
                return false  // a part is arriving: a later sweep removes it
            }
            return true
        }
        // Part files whose upload is gone or completed: left by a crash between the index
        // update and the unlink. (Every upload's row exists before any of its part files.)
        var indexError: StoreError?
        for name in FileSystem.contents(of: directory + "/uploads") where name.hasPrefix("mp-") {
            let id = String(name.dropFirst(3).prefix(32))
            let upload: MultipartUpload?
            do throws(StoreError) {
                upload = try multipartIndex.multipart(id)
            } catch {
                indexError = error  // the index did not answer: keep the file, say so once below
                continue
            }
            if let upload, upload.completedETag == nil { continue }
            FileSystem.remove(directory + "/uploads/" + name)
        }
        if let indexError {
            logger.error("Cannot check multipart part files against the index; they stay", metadata: ["error": "\(indexError)"])
        }
        return removed
    }

    /// The file of `part`: its number and MD5 in the name.
    func partPath(_ id: String, _ part: UploadedPart) -> String {
        "\(directory)/uploads/mp-\(id)-\(part.number)-\(hex(part.md5))"
    }
}

/// One part being written: to a temporary file, then fsynced, renamed into place and listed.
/// The same part sent again may `preempt` it from another thread.
///
/// `@unchecked Sendable` is sound: every method runs under `lock`, so the request's thread and a
/// preempting one never touch the writer at once.
public final class PartWriteStream: Preemptible, @unchecked Sendable {
    private let store: BlobStore
    private let upload: String
    private let number: Int
    private let temporary: String
    private let writer: HashingFileWriter
    private let expectedSize: UInt64?
    private let expectedSHA256: [UInt8]?
    private var ended = false
    /// What else stops the request when it is preempted (its connection is shut down).
    private var onPreempt: (@Sendable () -> Void)?
    private let lock = Mutex(())
    /// The part it holds in `BlobStore.partsInFlight`.
    let claim: String
    /// When the upload expires, computed as a part is saved (`BlobStore.multipartDeadline`).
    var expiry: (@Sendable () -> Int64)?

    init(store: BlobStore, upload: String, number: Int, temporary: String, descriptor: FileDescriptor,
         expectedSize: UInt64?, expectedSHA256: [UInt8]?, hasher: BodyHasher?) {
        self.store = store
        self.upload = upload
        self.number = number
        self.temporary = temporary
        self.writer = HashingFileWriter(descriptor: descriptor, expecting: expectedSize, bodyHasher: hasher)
        self.expectedSize = expectedSize
        self.expectedSHA256 = expectedSHA256
        self.claim = "\(upload)-\(number)"
    }

    deinit { abandon() }

    /// Runs `action` too when the same part sent again preempts this one.
    public func whenPreempted(_ action: @escaping @Sendable () -> Void) {
        lock.withLock { _ in onPreempt = action }
    }

    /// Appends bytes; `.uploadBusy` once the same part sent again has taken over.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(StoreError) {
        try lock.withLock { _ throws(StoreError) in
            guard !ended else { throw .uploadBusy }
            if let limit = store.options.maxBlobSize, writer.size + UInt64(bytes.count) > limit { throw .tooLarge(limit: limit) }
            try writer.write(bytes)
        }
    }

    /// The digests of every byte written (`HashingFileWriter.digests()`).
    public func digests() throws(StoreError) -> BodyHasher.Digests {
        try lock.withLock { _ throws(StoreError) in
            guard !ended else { throw .uploadBusy }
            return try writer.digests()
        }
    }

    /// Makes the part durable and lists it, with `md5` (computed by the caller) as its ETag and
    /// `checksum` in its upload's algorithm.
    public func finish(md5: [UInt8], checksum: String? = nil) throws(StoreError) -> UploadedPart {
        try lock.withLock { _ throws(StoreError) in
            guard !ended else { throw .uploadBusy }
            defer { end() }
            try writer.flush()
            if let expectedSHA256, writer.sha256 != expectedSHA256 {
                throw .digestMismatch(expected: expectedSHA256, actual: writer.sha256)
            }
            try writer.sync()
            writer.close()
            let part = UploadedPart(number: number, size: writer.size, md5: md5, modified: store.now(), checksum: checksum)
            let path = store.partPath(upload, part)
            try FileSystem.rename(temporary, path)
            ended = true
            try FileSystem.syncDirectory(store.directory + "/uploads")
            do throws(StoreError) {
                // The part replaced, if any, had other bytes under another name: its file goes.
                if let previous = try store.multipartIndex.savePart(part, of: upload), previous.md5 != part.md5 {
                    FileSystem.remove(store.partPath(upload, previous))
                }
                // A part arrived: the upload was not idle.
                if let expiry { try store.multipartIndex.extendMultipart(upload, until: expiry()) }
            } catch {
                FileSystem.remove(path)
                throw error
            }
            return part
        }
    }

    /// Drops the part's temporary file. Idempotent.
    public func abandon() {
        lock.withLock { _ in end() }
    }

    /// The same part sent again stops this one: its file goes and its connection is shut down.
    public func preempt() {
        let action = lock.withLock { _ -> (@Sendable () -> Void)? in
            guard !ended else { return nil }
            end()
            return onPreempt
        }
        action?()
    }

    /// Closes the file, removes it unless it was renamed into place, and gives up the part number.
    private func end() {
        writer.close()
        if !ended { FileSystem.remove(temporary) }
        ended = true
        store.partEnded(self)
    }
}

import BlobCatalog
import BlobContent
import BlobCore
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// A blob being written: its file in `DIR/blobs`, hashing what passes through it, logged as
/// pending (`PendingWrites`) until it is committed. Nothing is visible until `commit`; `abandon`
/// (or a failed commit) removes the file and forgets the entry.
///
/// Used by one thread at a time (the connection's worker), so it needs no lock.
public final class BlobWriteStream {
    private let store: BlobStore
    private let version: String
    private let pending: PendingWrites.Entry
    private let writer: HashingFileWriter
    private let limit: UInt64?
    private let expectedSHA256: [UInt8]?
    /// The SHA-256 of bytes copied in the kernel, which the writer's hasher never saw.
    private var copiedSHA256: [UInt8]?
    /// Set once the file is committed or removed.
    private var ended = false

    /// Bytes accepted so far.
    public var size: UInt64 { writer.size }

    /// Takes ownership of `descriptor`, the new empty file of `version`, logged as `pending`.
    init(store: BlobStore, version: String, pending: PendingWrites.Entry, descriptor: FileDescriptor,
         expectedSize: UInt64?, limit: UInt64?, expectedSHA256: [UInt8]?, hasher: BodyHasher?) {
        self.store = store
        self.version = version
        self.pending = pending
        self.writer = HashingFileWriter(descriptor: descriptor, expecting: expectedSize, bodyHasher: hasher)
        self.limit = limit
        self.expectedSHA256 = expectedSHA256
    }

    deinit { abandon() }

    /// Appends bytes. Throws `.tooLarge` past the size limit and `.insufficientStorage` when the
    /// disk is full; the stream is then abandoned.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(StoreError) {
        do throws(StoreError) {
            if let limit, writer.size + UInt64(bytes.count) > limit { throw StoreError.tooLarge(limit: limit) }
            try writer.write(bytes)
        } catch {
            abandon()
            throw error
        }
    }

    /// The digests of every byte written (`HashingFileWriter.digests()`).
    public func digests() throws(StoreError) -> BodyHasher.Digests {
        try writer.digests()
    }

    /// Makes the blob durable and visible at `key` (or at its SHA-256 hex when `key` is nil) if
    /// `condition` holds for the current record. Order: write out and fdatasync → fsync the
    /// folder → index commit (fsynced, shared by a group commit) → forget the pending entry.
    /// `completion` gets the outcome once durable, on whichever thread committed it (see
    /// `BlobIndex.commit`), or at once on this thread when the commit cannot start.
    public func commit(as key: BlobKey?, attributes: BlobAttributes, md5: [UInt8]? = nil, parts: Int? = nil,
                       partSizes: [UInt64]? = nil, partChecksums: [String]? = nil, checksum: String? = nil,
                       timeToLive: Int64? = nil, if condition: WriteCondition = .always, events: EventDraft? = nil,
                       then completion: @escaping (Result<StoredBlob, StoreError>) -> Void) {
        let record: BlobRecord
        do throws(StoreError) {
            try writer.flush()
            let digest = copiedSHA256 ?? writer.sha256
            if let expectedSHA256, expectedSHA256 != digest {
                throw StoreError.digestMismatch(expected: expectedSHA256, actual: digest)
            }
            let blobKey: BlobKey
            if let key {
                blobKey = key
            } else {
                // Content-addressed: if these bytes are already stored, nothing needs writing.
                // Only if they are: a record whose SHA-256 differs (stored before PUTs at such
                // keys were checked) is replaced by the bytes its key names.
                blobKey = try BlobKey(hex(digest))
                if let existing = try store.record(for: blobKey), existing.sha256 == digest {
                    abandon()
                    completion(.success(StoredBlob(record: existing, created: false)))
                    return
                }
            }
            // Durable before the index names it.
            try writer.sync()
            writer.close()
            let now = store.now()
            record = BlobRecord(key: blobKey, version: version, size: writer.size, sha256: digest,
                                attributes: attributes, modified: now, md5: md5, parts: parts, partSizes: partSizes,
                                partChecksums: partChecksums, checksum: checksum, ttlExpires: timeToLive.map { now + $0 })
        } catch {
            abandon()
            completion(.failure(error))
            return
        }
        store.commitWritten(record, pending: pending, if: condition, events: events) { [self] result in
            // Committed: the file is the blob's now, and must outlive this stream.
            if case .success = result { ended = true } else { abandon() }
            completion(result)
        }
    }

    /// `commit(as:attributes:if:then:)`, waiting for the outcome.
    public func commit(as key: BlobKey?, attributes: BlobAttributes = BlobAttributes(), md5: [UInt8]? = nil, parts: Int? = nil,
                       partSizes: [UInt64]? = nil, partChecksums: [String]? = nil, checksum: String? = nil,
                       timeToLive: Int64? = nil, if condition: WriteCondition = .always,
                       events: EventDraft? = nil) throws(StoreError) -> StoredBlob {
        try waitFor {
            commit(as: key, attributes: attributes, md5: md5, parts: parts, partSizes: partSizes, partChecksums: partChecksums,
                   checksum: checksum, timeToLive: timeToLive, if: condition, events: events, then: $0)
        }
    }

    /// Appends the first `count` bytes of the open file `descriptor` (a part, a copy's source),
    /// read with pread in 1 MiB pieces, each shown to `reading` first; the descriptor stays the
    /// caller's.
    public func write(contentsOf descriptor: FileDescriptor, count: UInt64,
                      reading: ((UnsafeRawBufferPointer) -> Void)? = nil) throws(StoreError) {
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset: UInt64 = 0
        while offset < count {
            let wanted = Int(min(UInt64(buffer.count), count - offset))
            let read = try FileSystem.mapping("read") { () throws(Errno) in
                try buffer.withUnsafeMutableBytes { buffer in
                    Result { () throws(Errno) in try descriptor.read(at: offset, into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<wanted])) }
                }.get()
            }
            guard read > 0 else { throw .io(operation: "read", errno: EIO) }
            try buffer.withUnsafeBytes { bytes in
                let chunk = UnsafeRawBufferPointer(rebasing: bytes[..<read])
                reading?(chunk)
                return Result { () throws(StoreError) in try write(chunk) }
            }.get()
            offset += UInt64(read)
        }
    }

    /// Fills the empty stream with the first `count` bytes of `descriptor`, a stored blob whose
    /// SHA-256 is `sha256`: inside the kernel where the file system can (copy_file_range, so
    /// the bytes never pass through user space), else through `write(contentsOf:count:)`,
    /// which hashes them. Nothing may be written after it.
    public func copy(contentsOf descriptor: FileDescriptor, count: UInt64, sha256: [UInt8]) throws(StoreError) {
        do throws(StoreError) {
            // A stream with a BodyHasher must see the bytes, so it never copies in the kernel.
            if writer.bodyHasher == nil, try writer.copyInKernel(from: descriptor, count: count) {
                copiedSHA256 = sha256
                return
            }
        } catch {
            abandon()
            throw error
        }
        try write(contentsOf: descriptor, count: count)
    }

    /// Drops the upload: closes and removes the file, and forgets its pending entry. Idempotent.
    public func abandon() {
        writer.close()
        guard !ended else { return }
        ended = true
        FileSystem.remove(store.path(ofVersion: version))
        store.pending.forget(pending)
    }
}

/// A committed blob and whether its key was new.
public struct StoredBlob: Sendable, Equatable {
    /// The record now in the index.
    public let record: BlobRecord
    /// True if the key did not exist before.
    public let created: Bool
}

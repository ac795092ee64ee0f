

#if canImport(Glibc)
import Glibc
#endif

/// A blob being written: a temp file in `DIR/tmp` that hashes what passes through it. Nothing is
/// visible until `commit`; `abandon` (or a failed commit) removes the temp file.
///
/// Used by one thread at a time (the connection's worker), so it needs no lock.
public final class BlobWriteStream {
    /// Bytes gathered before each write(2): large writes, and SHA-256 fed from the same buffer.
    static let bufferSize = 256 * 1024

    private let store: BlobStore
    private let tempPath: String
    private var descriptor: Int32
    private let buffer: UnsafeMutableRawBufferPointer
    private var buffered = 0
    private var hasher = SHA256Hasher()
    private let limit: UInt64?
    private let expectedSHA256: [UInt8]?

    /// Bytes accepted so far.
    public private(set) var size: UInt64 = 0

    init(store: BlobStore, tempPath: String, descriptor: Int32, limit: UInt64?, expectedSHA256: [UInt8]?) {
        self.store = store
        self.tempPath = tempPath
        self.descriptor = descriptor
        self.limit = limit
        self.expectedSHA256 = expectedSHA256
        self.buffer = .allocate(byteCount: Self.bufferSize, alignment: 4096)
    }

    deinit {
        abandon()
        buffer.deallocate()
    }

    /// Appends bytes. Throws `.tooLarge` past the size limit and `.insufficientStorage` when the
    /// disk is full; the stream is then abandoned.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(StoreError) {
        guard descriptor >= 0 else { throw .io(operation: "write", errno: EBADF) }
        size += UInt64(bytes.count)
        if let limit, size > limit {
            abandon()
            throw .tooLarge(limit: limit)
        }
        var rest = bytes
        while !rest.isEmpty {
            let n = min(rest.count, buffer.count - buffered)
            UnsafeMutableRawBufferPointer(rebasing: buffer[buffered..<buffered + n])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: rest[..<n]))
            buffered += n
            rest = UnsafeRawBufferPointer(rebasing: rest[n...])
            if buffered == buffer.count { try flush() }
        }
    }

    /// Makes the blob durable and visible at `key` (or at its SHA-256 hex when `key` is nil) if
    /// `condition` holds for the current record. Order: fsync file → rename → fsync dir → index.
    public func commit(as key: BlobKey?, contentType: String,
                       if condition: (BlobRecord?) -> Bool = { _ in true }) throws(StoreError) -> StoredBlob {
        guard descriptor >= 0 else { throw .io(operation: "commit", errno: EBADF) }
        do throws(StoreError) {
            try flush()
            let digest = hasher.finalize()
            if let expectedSHA256, expectedSHA256 != digest {
                throw StoreError.digestMismatch(expected: expectedSHA256, actual: digest)
            }
            let blobKey: BlobKey
            if let key {
                blobKey = key
            } else {
                // Content-addressed: if these bytes are already stored, nothing needs writing.
                blobKey = try BlobKey(hex(digest))
                if let existing = try store.record(for: blobKey) {
                    abandon()
                    return StoredBlob(record: existing, created: false)
                }
            }
            try FileSystem.sync(descriptor)
            close(descriptor)
            descriptor = -1
            let record = BlobRecord(key: blobKey, version: FileSystem.randomID(), size: size, sha256: digest,
                                    contentType: contentType, modified: Int64(time(nil)))
            return try store.install(tempPath: tempPath, record: record, if: condition)
        } catch {
            abandon()
            throw error
        }
    }

    /// Drops the upload: closes and removes the temp file. Idempotent.
    public func abandon() {
        if descriptor >= 0 {
            close(descriptor)
            descriptor = -1
        }
        FileSystem.remove(tempPath)
    }

    private func flush() throws(StoreError) {
        guard buffered > 0 else { return }
        let chunk = UnsafeRawBufferPointer(rebasing: buffer[..<buffered])
        hasher.update(chunk)
        try FileSystem.writeAll(descriptor, chunk)
        buffered = 0
    }
}

/// A committed blob and whether its key was new.
public struct StoredBlob: Sendable, Equatable {
    /// The record now in the index.
    public let record: BlobRecord
    /// True if the key did not exist before.
    public let created: Bool
}

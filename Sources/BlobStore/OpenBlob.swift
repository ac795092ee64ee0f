#if canImport(Glibc)
import Glibc
#endif

/// One version of a blob, opened for reading. It keeps reading that version even if the key is
/// replaced or deleted meanwhile: the file is unlinked, but the open descriptor keeps it alive.
public final class OpenBlob: Sendable {
    /// The version that was opened.
    public let record: BlobRecord
    private let descriptor: Int32

    /// Takes ownership of `descriptor`.
    init(record: BlobRecord, descriptor: Int32) {
        self.record = record
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// Reads up to `buffer.count` bytes at file offset `offset`; 0 means end of file.
    public func read(at offset: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws(StoreError) -> Int {
        try FileSystem.retrying("pread") { pread(descriptor, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// `count` bytes from `offset`, read into memory (for small bodies).
    public func bytes(at offset: UInt64, count: Int) throws(StoreError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = bytes.withUnsafeMutableBytes { buffer in
                pread(descriptor, buffer.baseAddress.map { $0 + done }, count - done, off_t(offset) + off_t(done))
            }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw .io(operation: "read \(record.key)", errno: n == 0 ? EIO : errno) }
            done += n
        }
        return bytes
    }

    /// A new descriptor for the same open file, owned by the caller (for sendfile responses).
    public func duplicateDescriptor() throws(StoreError) -> Int32 {
        Int32(try FileSystem.retrying("dup") { Int(fcntl(descriptor, F_DUPFD_CLOEXEC, 0)) })
    }
}

import BlobCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One version of a blob, opened for reading. It keeps reading that version even if the key is
/// replaced or deleted meanwhile: the file is unlinked, but the open descriptor keeps it alive.
public final class OpenBlob: Sendable {
    /// The version that was opened.
    public let record: BlobRecord
    /// The open file; -1 once handed over by `takeDescriptor()`.
    private let file: Atomic<Int32>
    private var descriptor: Int32 { file.load(ordering: .relaxed) }

    /// Takes ownership of `descriptor`.
    package init(record: BlobRecord, descriptor: Int32) {
        self.record = record
        self.file = Atomic(descriptor)
    }

    deinit {
        let descriptor = file.load(ordering: .relaxed)
        if descriptor >= 0 { close(descriptor) }
    }

    /// Reads up to `buffer.count` bytes at file offset `offset`; 0 means end of file.
    public func read(at offset: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws(StoreError) -> Int {
        try FileSystem.retrying("pread") { pread(descriptor, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// `count` bytes from `offset`, read into memory (for small bodies).
    public func bytes(at offset: UInt64, count: Int) throws(StoreError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = FileSystem.interruptible {
                bytes.withUnsafeMutableBytes { buffer in
                    pread(descriptor, buffer.baseAddress.map { $0 + done }, count - done, off_t(offset) + off_t(done))
                }
            }
            guard n > 0 else { throw .io(operation: "read \(record.key)", errno: n == 0 ? EIO : errno) }
            done += n
        }
        return bytes
    }

    /// Hands the open file to the caller, who closes it (a sendfile response); reads through
    /// this object fail after that. Throws if it was handed over already.
    public func takeDescriptor() throws(StoreError) -> Int32 {
        let descriptor = file.exchange(-1, ordering: .relaxed)
        guard descriptor >= 0 else { throw .io(operation: "take descriptor of \(record.key)", errno: EBADF) }
        return descriptor
    }
}

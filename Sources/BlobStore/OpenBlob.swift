import Synchronization

import SystemCalls

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
    init(record: BlobRecord, descriptor: FileDescriptor) {
        self.record = record
        self.file = Atomic(descriptor.rawValue)
    }

    deinit {
        let descriptor = file.load(ordering: .relaxed)
        if descriptor >= 0 { FileDescriptor(rawValue: descriptor).close() }
    }

    /// Reads up to `buffer.count` bytes at file offset `offset`; 0 means end of file.
    public func read(at offset: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws(StoreError) -> Int {
        try FileSystem.mapping("pread") { () throws(Errno) in try FileDescriptor(rawValue: descriptor).read(at: offset, into: buffer) }
    }

    /// `count` bytes from `offset`, read into memory (for small bodies).
    public func bytes(at offset: UInt64, count: Int) throws(StoreError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let file = FileDescriptor(rawValue: descriptor)
        let done = try FileSystem.mapping("read \(record.key)") { () throws(Errno) in
            try bytes.withUnsafeMutableBytes { buffer in Result { () throws(Errno) in try file.readAll(at: offset, into: buffer) } }.get()
        }
        guard done == count else { throw .io(operation: "read \(record.key)", errno: EIO) }
        return bytes
    }

    /// Hands the open file to the caller, who closes it (a sendfile response); reads through
    /// this object fail after that. Throws if it was handed over already.
    public func takeDescriptor() throws(StoreError) -> FileDescriptor {
        let descriptor = file.exchange(-1, ordering: .relaxed)
        guard descriptor >= 0 else { throw .io(operation: "take descriptor of \(record.key)", errno: EBADF) }
        return FileDescriptor(rawValue: descriptor)
    }
}

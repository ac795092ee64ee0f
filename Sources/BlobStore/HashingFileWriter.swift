import CFileSystem

import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// Appends to an open file through one large buffer, feeding SHA-256 from the same buffer:
/// few, large write(2) calls and one pass over the bytes. With a `BodyHasher`, that hasher sees
/// the bytes instead (SHA-256 and MD5, maybe on its own thread), and `hasher` stays empty.
/// Used by one thread at a time.
final class HashingFileWriter {
    /// Bytes gathered before each write(2), at most.
    static let maxBufferSize = 256 * 1024
    /// Writeback of every this many bytes starts at once, so dirty pages never pile up and
    /// the final fsync has little left to do.
    static let writebackWindow: UInt64 = 8 * 1024 * 1024

    /// The file; owned by the writer, closed by `close()` or deinit.
    private(set) var descriptor: FileDescriptor?
    private var buffer: UnsafeMutableRawBufferPointer
    /// Whether `buffer` is the body hasher's, not the writer's own.
    private let borrowsBuffers: Bool
    private var buffered = 0
    /// SHA-256 of every byte flushed so far (buffered bytes join it on `flush()`), unless
    /// `bodyHasher` hashes them.
    private(set) var hasher: SHA256Hasher
    let bodyHasher: BodyHasher?
    /// Bytes accepted, buffered ones included.
    private(set) var size: UInt64
    /// Bytes written with write(2) so far, and where the last writeback started.
    private var written: UInt64
    private var writebackStart: UInt64

    /// The buffer for a write of `expected` bytes (nil: unknown): large writes get the full
    /// buffer, small ones one just big enough, so a 4 KiB upload neither maps nor faults in
    /// 256 KiB it never uses.
    static func bufferSize(expecting expected: UInt64?) -> Int {
        guard let expected, expected < UInt64(maxBufferSize) else { return maxBufferSize }
        return max(4096, (Int(expected) + 4095) & ~4095)
    }

    /// Takes ownership of `descriptor`, positioned at `size`, whose first `size` bytes `hasher` has seen.
    /// `bodyHasher`: hashes the bytes instead of `hasher` (which then stays empty; a body hasher
    /// that continues an earlier hash was made `resuming` it).
    init(descriptor: FileDescriptor, hasher: SHA256Hasher = SHA256Hasher(), size: UInt64 = 0, expecting expected: UInt64? = nil,
         bodyHasher: BodyHasher? = nil) {
        self.descriptor = descriptor
        self.hasher = hasher
        self.bodyHasher = bodyHasher
        self.size = size
        self.written = size
        self.writebackStart = size
        if let borrowed = bodyHasher?.takeBuffer() {
            buffer = borrowed
            borrowsBuffers = true
        } else {
            buffer = .allocate(byteCount: Self.bufferSize(expecting: expected), alignment: 4096)
            borrowsBuffers = false
        }
    }

    deinit {
        close()
        if !borrowsBuffers { buffer.deallocate() }
    }

    /// The SHA-256 of every byte flushed.
    var sha256: [UInt8] {
        bodyHasher?.finish().sha256 ?? hasher.finalize()
    }

    /// The SHA-256 of every byte flushed, not finalized (waiting for the `BodyHasher`).
    var sha256SoFar: SHA256Hasher {
        bodyHasher?.sha256SoFar() ?? hasher
    }

    /// Writes out what is buffered and waits for the `BodyHasher`: the digests of every byte
    /// written (its SHA-256 alone without one).
    func digests() throws(StoreError) -> BodyHasher.Digests {
        try flush()
        return bodyHasher?.finish() ?? BodyHasher.Digests(sha256: sha256, md5: nil)
    }

    /// Appends bytes.
    func write(_ bytes: UnsafeRawBufferPointer) throws(StoreError) {
        guard descriptor != nil else { throw .io(operation: "write", errno: EBADF) }
        size += UInt64(bytes.count)
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

    /// Writes out the buffer.
    func flush() throws(StoreError) {
        guard buffered > 0 else { return }
        guard let descriptor else { throw .io(operation: "write", errno: EBADF) }
        let chunk = UnsafeRawBufferPointer(rebasing: buffer[..<buffered])
        buffered = 0
        try FileSystem.writeAll(descriptor, chunk)
        if let bodyHasher {
            if let next = bodyHasher.hash(buffer, count: chunk.count) { buffer = next }
        } else {
            hasher.update(chunk)
        }
        written += UInt64(chunk.count)
        if written - writebackStart >= Self.writebackWindow {
            let (start, length) = (Int64(writebackStart), Int64(written - writebackStart))
            _ = SystemCall.run("sync_file_range") { blobd_start_writeback(descriptor.rawValue, start, length) }
            writebackStart = written
        }
    }

    /// Appends the first `count` bytes of `source` inside the kernel (copy_file_range), unseen
    /// by `hasher`. Only into an empty file. False, with nothing appended, when the file system
    /// cannot copy between these files; the caller then copies through user space.
    func copyInKernel(from source: FileDescriptor, count: UInt64) throws(StoreError) -> Bool {
        guard let descriptor, size == 0, buffered == 0 else { throw .io(operation: "copy_file_range", errno: EINVAL) }
        var offset: Int64 = 0
        while UInt64(offset) < count {
            let wanted = UInt(min(count - UInt64(offset), 1 << 30))
            // EBADF here is copy_file_range refusing a descriptor's mode, not a closed one.
            let copied = SystemCall.run("copy_file_range", badDescriptorIsFatal: false) {
                blobd_copy_file_range(source.rawValue, &offset, descriptor.rawValue, wanted)
            }
            if copied < 0 {
                let code = errno
                if offset == 0 && [EXDEV, EINVAL, ENOSYS, EOPNOTSUPP, EBADF].contains(code) { return false }
                throw FileSystem.error("copy_file_range", code)
            }
            guard copied > 0 else { throw .io(operation: "copy_file_range", errno: EIO) }
            size = UInt64(offset)
            written = size
        }
        return true
    }

    /// Flushes and fdatasyncs: every accepted byte is durable.
    func sync() throws(StoreError) {
        try flush()
        guard let descriptor else { throw .io(operation: "fdatasync", errno: EBADF) }
        try FileSystem.syncData(descriptor)
    }

    /// Closes the file (buffered bytes are dropped). Idempotent.
    func close() {
        descriptor?.close()
        descriptor = nil
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// An open file, as a type rather than a bare `Int32`; every call on it goes through
/// `SystemCall` (EINTR retried, EBADF fatal). A value, as in swift-system: whoever opened it
/// closes it, preferably with `closeAfter(_:)` right where it is opened.
public struct FileDescriptor: Sendable, Hashable {
    public let rawValue: Int32

    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// open(2) with O_CLOEXEC added; `permissions` only matter with O_CREAT.
    public static func open(_ path: String, _ flags: Int32, permissions: mode_t = 0o600) throws(Errno) -> FileDescriptor {
        FileDescriptor(rawValue: try SystemCall.checked("open") { Glibc.open(path, flags | O_CLOEXEC, permissions) })
    }

    /// Runs `body`, then closes the file, whether `body` threw or not.
    public func closeAfter<R, E: Error>(_ body: (FileDescriptor) throws(E) -> R) throws(E) -> R {
        defer { close() }
        return try body(self)
    }

    /// close(2). Never retried: Linux has closed the descriptor even when close reports EINTR
    /// or EIO, and a retry could close a descriptor another thread just opened.
    public func close() {
        if Glibc.close(rawValue) == -1 && errno == EBADF { SystemCall.badDescriptor("close") }
    }

    /// read(2) at the current offset; 0 at end of file.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        try SystemCall.checked("read") { Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
    }

    /// pread(2); 0 at end of file.
    public func read(at offset: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        try SystemCall.checked("pread") { pread(rawValue, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// Fills `buffer` from `offset` with pread(2); fewer bytes only at end of file.
    public func readAll(at offset: UInt64, into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        var done = 0
        while done < buffer.count {
            let n = try read(at: offset + UInt64(done), into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]))
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// write(2) at the current offset; the bytes written, maybe fewer than given.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(Errno) -> Int {
        try SystemCall.checked("write") { Glibc.write(rawValue, bytes.baseAddress, bytes.count) }
    }

    /// Writes all of `bytes` at the current offset.
    public func writeAll(_ bytes: UnsafeRawBufferPointer) throws(Errno) {
        var done = 0
        while done < bytes.count {
            done += try write(UnsafeRawBufferPointer(rebasing: bytes[done...]))
        }
    }

    /// fsync(2).
    public func sync() throws(Errno) {
        try SystemCall.checked("fsync") { fsync(rawValue) }
    }

    /// fdatasync(2): the bytes and size are durable (not the times).
    public func syncData() throws(Errno) {
        try SystemCall.checked("fdatasync") { fdatasync(rawValue) }
    }

    /// ftruncate(2).
    public func truncate(to size: UInt64) throws(Errno) {
        try SystemCall.checked("ftruncate") { ftruncate(rawValue, off_t(clamping: size)) }
    }

    /// lseek(2) to an absolute offset.
    public func seek(to offset: UInt64) throws(Errno) {
        try SystemCall.checked("lseek") { lseek(rawValue, off_t(clamping: offset), SEEK_SET) }
    }

    /// fchmod(2).
    public func setPermissions(_ mode: mode_t) throws(Errno) {
        try SystemCall.checked("fchmod") { fchmod(rawValue, mode) }
    }

    /// fstat(2).
    public func status() throws(Errno) -> stat {
        var status = stat()
        try SystemCall.checked("fstat") { fstat(rawValue, &status) }
        return status
    }

    /// flock(2) with LOCK_EX | LOCK_NB: false if another open file holds the lock.
    public func tryLockExclusively() throws(Errno) -> Bool {
        if SystemCall.run("flock", { flock(rawValue, LOCK_EX | LOCK_NB) }) == 0 { return true }
        if errno == EWOULDBLOCK { return false }
        throw Errno(errno)
    }

    /// posix_fallocate(3) of the first `size` bytes.
    public func allocate(size: UInt64) throws(Errno) {
        let code = SystemCall.returningError("posix_fallocate") { posix_fallocate(rawValue, 0, off_t(clamping: size)) }
        if code != 0 { throw Errno(code) }
    }
}

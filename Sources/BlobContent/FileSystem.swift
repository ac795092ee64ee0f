import BlobCore
#if canImport(Glibc)
import Glibc
#endif

/// Thin POSIX helpers: EINTR retried, errno turned into `StoreError`. Every system call blobd
/// makes goes through `interruptible(_:)`, directly or through `retrying(_:_:)`.
public enum FileSystem {
    /// Runs a system call that returns -1 and sets errno on failure again while it fails with
    /// EINTR; returns its last result, with errno as that call left it.
    @inlinable
    public static func interruptible<Result: BinaryInteger>(_ call: () -> Result) -> Result {
        while true {
            let result = call()
            if result != -1 || errno != EINTR { return result }
        }
    }

    /// Runs a system call until it does not fail with EINTR; a failure throws.
    package static func retrying(_ operation: String, _ call: () -> Int) throws(StoreError) -> Int {
        let result = interruptible(call)
        if result >= 0 { return result }
        throw error(operation, errno)
    }

    /// The error for a failed call; a full disk or quota is `insufficientStorage`.
    package static func error(_ operation: String, _ code: Int32) -> StoreError {
        code == ENOSPC || code == EDQUOT ? .insufficientStorage : .io(operation: operation, errno: code)
    }

    /// Writes all of `buffer` at the descriptor's current offset.
    package static func writeAll(_ descriptor: Int32, _ buffer: UnsafeRawBufferPointer) throws(StoreError) {
        var done = 0
        while done < buffer.count {
            let rest = UnsafeRawBufferPointer(rebasing: buffer[done...])
            done += try retrying("write") { write(descriptor, rest.baseAddress, rest.count) }
        }
    }

    /// Files and folders blobd makes are its own only, whatever the umask: blobs are readable
    /// by no other local user even without the systemd unit's `UMask=`.
    package static let fileMode: mode_t = 0o600
    package static let folderMode: mode_t = 0o700

    /// Opens `path`; the caller closes the returned descriptor. With `O_CREAT` the file gets
    /// `fileMode` exactly: the umask can only take bits away, so a umask that takes the owner's
    /// (0277) is undone by fchmod.
    package static func open(_ path: String, _ flags: Int32) throws(StoreError) -> Int32 {
        let descriptor = Int32(try retrying("open \(path)") { Int(Glibc.open(path, flags | O_CLOEXEC, fileMode)) })
        // EPERM: a file that was there already and is not blobd's, which it leaves as it is.
        if flags & O_CREAT != 0 && interruptible({ fchmod(descriptor, fileMode) }) != 0 && errno != EPERM {
            let code = errno
            close(descriptor)
            throw error("fchmod \(path)", code)
        }
        return descriptor
    }

    /// fsync(2) of a file.
    package static func sync(_ descriptor: Int32) throws(StoreError) {
        _ = try retrying("fsync") { Int(fsync(descriptor)) }
    }

    /// fdatasync(2): the file's bytes and size are durable (not its times).
    package static func syncData(_ descriptor: Int32) throws(StoreError) {
        _ = try retrying("fdatasync") { Int(fdatasync(descriptor)) }
    }

    /// fsync(2) of a directory, so a rename or unlink in it is durable.
    package static func syncDirectory(_ path: String) throws(StoreError) {
        let descriptor = try open(path, O_RDONLY | O_DIRECTORY)
        defer { close(descriptor) }
        try sync(descriptor)
    }

    /// Creates a directory; returns false if it was already there.
    @discardableResult
    package static func makeDirectory(_ path: String) throws(StoreError) -> Bool {
        if interruptible({ mkdir(path, folderMode) }) == 0 {
            // As for files: the umask may have taken the owner's bits.
            guard interruptible({ chmod(path, folderMode) }) == 0 || errno == EPERM else { throw error("chmod \(path)", errno) }
            return true
        }
        if errno == EEXIST { return false }
        throw error("mkdir \(path)", errno)
    }

    /// rename(2).
    package static func rename(_ from: String, _ to: String) throws(StoreError) {
        _ = try retrying("rename \(from)") { Int(Glibc.rename(from, to)) }
    }

    /// link(2): a second name for a file.
    package static func link(_ from: String, _ to: String) throws(StoreError) {
        _ = try retrying("link \(to)") { Int(Glibc.link(from, to)) }
    }

    /// unlink(2), ignoring a file that is already gone; true if this call removed it.
    @discardableResult
    package static func remove(_ path: String) -> Bool {
        interruptible { unlink(path) } == 0
    }

    /// ftruncate(2), a file cut (or grown) to `size` bytes; false (errno set) if it failed.
    @discardableResult
    package static func truncate(_ descriptor: Int32, to size: off_t) -> Bool {
        interruptible { ftruncate(descriptor, size) } == 0
    }

    /// fstat(2) of an open file; nil (errno set) if it failed.
    package static func status(_ descriptor: Int32) -> stat? {
        var status = stat()
        return interruptible({ fstat(descriptor, &status) }) == 0 ? status : nil
    }

    /// Bytes and inodes available to unprivileged users on the file system holding `path`; nil
    /// when unknown, including a file system that reports no size at all (ceph-fuse without a
    /// Ceph manager reports 0 blocks): the write then finds out by ENOSPC. `inodes` is nil where
    /// the file system has no fixed number of them (btrfs reports 0).
    package static func space(at path: String) -> (bytes: UInt64, inodes: (free: UInt64, total: UInt64)?)? {
        var info = statvfs()
        guard interruptible({ statvfs(path, &info) }) == 0, info.f_blocks > 0 else { return nil }
        let bytes = UInt64(info.f_bavail).multipliedReportingOverflow(by: UInt64(info.f_frsize))
        let inodes = info.f_files > 0 ? (free: UInt64(info.f_favail), total: UInt64(info.f_files)) : nil
        return (bytes.overflow ? .max : bytes.partialValue, inodes)
    }

    /// The names in a directory (without `.` and `..`).
    package static func contents(of path: String) -> [String] {
        guard let dir = opendir(path) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// The bytes of a small file, or nil if it cannot be read.
    package static func contents(ofFile path: String) -> [UInt8]? {
        let descriptor = interruptible { Glibc.open(path, O_RDONLY | O_CLOEXEC) }
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = interruptible { buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) } }
            guard count >= 0 else { return nil }
            if count == 0 { return bytes }
            bytes += buffer[..<count]
        }
    }

    /// 16 random bytes as 32 lowercase hex digits.
    package static func randomID() -> String {
        // Two draws of the system generator (each a getrandom call), not one per byte.
        var generator = SystemRandomNumberGenerator()
        let words = [generator.next(), generator.next()]
        return hex(words.withUnsafeBytes { Array($0) })
    }
}

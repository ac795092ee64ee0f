import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// The store's POSIX helpers over `SystemCalls` (EINTR retried, EBADF fatal): errno turned
/// into `StoreError`, a full disk or quota into `insufficientStorage`. Every system call of the
/// store goes through `SystemCall`, directly or through `FileDescriptor` and these helpers.
public enum FileSystem {
    /// Runs a system call that returns -1 and sets errno on failure; a failure throws.
    @discardableResult
    static func checked<Result: BinaryInteger>(_ operation: @autoclosure () -> String, _ name: StaticString,
                                               _ call: () -> Result) throws(StoreError) -> Result {
        do throws(Errno) {
            return try SystemCall.checked(name, call)
        } catch {
            throw Self.error(operation(), error.code)
        }
    }

    /// Runs `body`, turning its errno into the store's error for `operation`.
    static func mapping<R>(_ operation: @autoclosure () -> String, _ body: () throws(Errno) -> R) throws(StoreError) -> R {
        do throws(Errno) {
            return try body()
        } catch {
            throw Self.error(operation(), error.code)
        }
    }

    /// The error for a failed call; a full disk or quota is `insufficientStorage`.
    static func error(_ operation: String, _ code: Int32) -> StoreError {
        code == ENOSPC || code == EDQUOT ? .insufficientStorage : .io(operation: operation, errno: code)
    }

    /// Writes all of `buffer` at the descriptor's current offset.
    static func writeAll(_ descriptor: FileDescriptor, _ buffer: UnsafeRawBufferPointer) throws(StoreError) {
        try mapping("write") { () throws(Errno) in try descriptor.writeAll(buffer) }
    }

    /// Files and folders blobd makes are its own only, whatever the umask: blobs are readable
    /// by no other local user even without the systemd unit's `UMask=`.
    static let fileMode: mode_t = 0o600
    static let folderMode: mode_t = 0o700

    /// Opens `path`; the caller closes the returned descriptor. With `O_CREAT` the file gets
    /// `fileMode` exactly: the umask can only take bits away, so a umask that takes the owner's
    /// (0277) is undone by fchmod.
    static func open(_ path: String, _ flags: Int32) throws(StoreError) -> FileDescriptor {
        let descriptor = try mapping("open \(path)") { () throws(Errno) in try FileDescriptor.open(path, flags, permissions: fileMode) }
        guard flags & O_CREAT != 0 else { return descriptor }
        do throws(Errno) {
            try descriptor.setPermissions(fileMode)
        } catch let error where error.code != EPERM {  // EPERM: a file that was there already and is not blobd's, left as it is.
            descriptor.close()
            throw Self.error("fchmod \(path)", error.code)
        } catch {}
        return descriptor
    }

    /// Opens an existing file for reading; nil if there is none at `path`.
    static func openIfExists(_ path: String) throws(StoreError) -> FileDescriptor? {
        do throws(Errno) {
            return try FileDescriptor.open(path, O_RDONLY)
        } catch let error where error.code == ENOENT {
            return nil
        } catch {
            throw Self.error("open \(path)", error.code)
        }
    }

    /// fsync(2) of a file.
    static func sync(_ descriptor: FileDescriptor) throws(StoreError) {
        try mapping("fsync") { () throws(Errno) in try descriptor.sync() }
    }

    /// fdatasync(2): the file's bytes and size are durable (not its times).
    static func syncData(_ descriptor: FileDescriptor) throws(StoreError) {
        try mapping("fdatasync") { () throws(Errno) in try descriptor.syncData() }
    }

    /// fsync(2) of a directory, so a rename or unlink in it is durable.
    static func syncDirectory(_ path: String) throws(StoreError) {
        try open(path, O_RDONLY | O_DIRECTORY).closeAfter { descriptor throws(StoreError) in try sync(descriptor) }
    }

    /// Creates a directory; returns false if it was already there.
    @discardableResult
    static func makeDirectory(_ path: String) throws(StoreError) -> Bool {
        if SystemCall.run("mkdir", { mkdir(path, folderMode) }) == 0 {
            // As for files: the umask may have taken the owner's bits.
            guard SystemCall.run("chmod", { chmod(path, folderMode) }) == 0 || errno == EPERM else { throw error("chmod \(path)", errno) }
            return true
        }
        if errno == EEXIST { return false }
        throw error("mkdir \(path)", errno)
    }

    /// rename(2).
    static func rename(_ from: String, _ to: String) throws(StoreError) {
        try checked("rename \(from)", "rename") { Glibc.rename(from, to) }
    }

    /// link(2): a second name for a file.
    static func link(_ from: String, _ to: String) throws(StoreError) {
        try checked("link \(to)", "link") { Glibc.link(from, to) }
    }

    /// unlink(2), ignoring a file that is already gone; true if this call removed it.
    @discardableResult
    static func remove(_ path: String) -> Bool {
        SystemCall.run("unlink") { unlink(path) } == 0
    }

    /// Whether `path` exists (access(2) with F_OK), or is writable (`W_OK`).
    static func isAccessible(_ path: String, _ mode: Int32 = F_OK) -> Bool {
        SystemCall.run("access") { access(path, mode) } == 0
    }

    /// Bytes and inodes available to unprivileged users on the file system holding `path`; nil
    /// when unknown, including a file system that reports no size at all (ceph-fuse without a
    /// Ceph manager reports 0 blocks): the write then finds out by ENOSPC. `inodes` is nil where
    /// the file system has no fixed number of them (btrfs reports 0).
    static func space(at path: String) -> (bytes: UInt64, inodes: (free: UInt64, total: UInt64)?)? {
        var info = statvfs()
        guard SystemCall.run("statvfs", { statvfs(path, &info) }) == 0, info.f_blocks > 0 else { return nil }
        let bytes = UInt64(info.f_bavail).multipliedReportingOverflow(by: UInt64(info.f_frsize))
        let inodes = info.f_files > 0 ? (free: UInt64(info.f_favail), total: UInt64(info.f_files)) : nil
        return (bytes.overflow ? .max : bytes.partialValue, inodes)
    }

    /// The names in a directory (without `.` and `..`).
    static func contents(of path: String) -> [String] {
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
    static func contents(ofFile path: String) -> [UInt8]? {
        guard let descriptor = try? FileDescriptor.open(path, O_RDONLY) else { return nil }
        return descriptor.closeAfter { descriptor in
            var bytes: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 64 * 1024)
            while true {
                guard let count = try? buffer.withUnsafeMutableBytes({ try descriptor.read(into: $0) })
                else { return nil }
                if count == 0 { return bytes }
                bytes += buffer[..<count]
            }
        }
    }

    /// 16 random bytes as 32 lowercase hex digits.
    static func randomID() -> String {
        // Two draws of the system generator (each a getrandom call), not one per byte.
        var generator = SystemRandomNumberGenerator()
        let words = [generator.next(), generator.next()]
        return hex(words.withUnsafeBytes { Array($0) })
    }
}

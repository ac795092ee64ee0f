import BlobCore
#if canImport(Glibc)
import Glibc
#endif

/// An exclusive `flock` on `DIR/lock`, held for the life of the object: one blobd (or fsck)
/// per data directory. The kernel drops it when the process dies, so a crash never leaves it stale.
public final class DataDirectoryLock: Sendable {
    private let descriptor: Int32

    /// Takes the lock, or throws `.dataDirectoryLocked` if another process holds it.
    public init(directory: String) throws(StoreError) {
        let path = directory + "/lock"
        let descriptor = try FileSystem.open(path, O_RDWR | O_CREAT)
        guard FileSystem.interruptible({ flock(descriptor, LOCK_EX | LOCK_NB) }) == 0 else {
            let code = errno
            close(descriptor)
            throw code == EWOULDBLOCK ? .dataDirectoryLocked(path: directory) : FileSystem.error("flock \(path)", code)
        }
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }
}

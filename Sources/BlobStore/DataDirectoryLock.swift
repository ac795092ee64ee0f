import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// An exclusive `flock` on `DIR/lock`, held for the life of the object: one blobd (or fsck)
/// per data directory. The kernel drops it when the process dies, so a crash never leaves it stale.
public final class DataDirectoryLock: Sendable {
    private let descriptor: FileDescriptor

    /// Takes the lock, or throws `.dataDirectoryLocked` if another process holds it.
    public init(directory: String) throws(StoreError) {
        let path = directory + "/lock"
        let descriptor = try FileSystem.open(path, O_RDWR | O_CREAT)
        let locked: Bool
        do throws(Errno) {
            locked = try descriptor.tryLockExclusively()
        } catch {
            descriptor.close()
            throw FileSystem.error("flock \(path)", error.code)
        }
        guard locked else {
            descriptor.close()
            throw .dataDirectoryLocked(path: directory)
        }
        self.descriptor = descriptor
    }

    deinit { descriptor.close() }
}

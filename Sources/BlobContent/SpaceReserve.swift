import BlobCore
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A file of preallocated blocks that only deletes and the index may use: when a delete cannot
/// be recorded for want of space (the index's write gets ENOSPC or SQLITE_FULL on a volume at
/// 100 %), the file is emptied and the delete retried, so a full disk is never a dead end.
/// Writes are refused until the reserve is whole again (`restore`), which needs the space back.
package final class SpaceReserve: Sendable {
    /// The reserve file.
    package let path: String
    /// Its size: 1 % of the file system, from 256 KiB to 16 MiB; 0 where the file system does
    /// not say its size, or when not `enabled` (then there is no reserve).
    package let size: UInt64
    private let held = Atomic<Bool>(false)

    /// Sizes the reserve for the file system holding `path`, and makes it whole if it can.
    package init(path: String, enabled: Bool) {
        self.path = path
        var info = statvfs()
        if enabled, FileSystem.interruptible({ statvfs(Self.folder(of: path), &info) }) == 0, info.f_blocks > 0 {
            let total = UInt64(info.f_blocks).multipliedReportingOverflow(by: UInt64(info.f_frsize))
            size = min(16 << 20, max(256 << 10, total.overflow ? 16 << 20 : total.partialValue / 100))
        } else {
            size = 0
        }
        restore()
    }

    /// True when the reserve is whole (or there is none to keep).
    package var isHeld: Bool { size == 0 || held.load(ordering: .acquiring) }

    /// Makes the reserve whole if it is not; false if the space is not there.
    @discardableResult
    package func restore() -> Bool {
        guard !isHeld else { return true }
        let descriptor = FileSystem.interruptible { open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600) }
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        if let status = FileSystem.status(descriptor), status.st_blocks * 512 >= Int(clamping: size) {
            held.store(true, ordering: .releasing)
            return true
        }
        guard Self.allocate(descriptor, size: off_t(clamping: size)), FileSystem.interruptible({ fsync(descriptor) }) == 0 else {
            FileSystem.truncate(descriptor, to: 0)
            return false
        }
        held.store(true, ordering: .releasing)
        return true
    }

    /// Gives the reserve's blocks back to the file system; false if it was not held.
    package func release() -> Bool {
        guard size > 0, held.exchange(false, ordering: .acquiringAndReleasing) else { return false }
        let descriptor = FileSystem.interruptible { open(path, O_WRONLY | O_CLOEXEC) }
        guard descriptor >= 0 else { return true }
        defer { close(descriptor) }
        FileSystem.truncate(descriptor, to: 0)
        _ = FileSystem.interruptible { fsync(descriptor) }
        return true
    }

    /// posix_fallocate(3) of the first `size` bytes. It returns its error instead of setting
    /// errno, so `FileSystem.interruptible` does not fit it: EINTR is retried here.
    private static func allocate(_ descriptor: Int32, size: off_t) -> Bool {
        while true {
            let code = posix_fallocate(descriptor, 0, size)
            if code != EINTR { return code == 0 }
        }
    }

    private static func folder(of path: String) -> String {
        path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
    }
}

import Synchronization

import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// A file of preallocated blocks that only deletes and the index may use: when a delete cannot
/// be recorded for want of space (the index's write gets ENOSPC or SQLITE_FULL on a volume at
/// 100 %), the file is emptied and the delete retried, so a full disk is never a dead end.
/// Writes are refused until the reserve is whole again (`restore`), which needs the space back.
final class SpaceReserve: Sendable {
    /// The reserve file.
    let path: String
    /// Its size: 1 % of the file system, from 256 KiB to 16 MiB; 0 where the file system does
    /// not say its size, or when not `enabled` (then there is no reserve).
    let size: UInt64
    private let held = Atomic<Bool>(false)

    /// Sizes the reserve for the file system holding `path`, and makes it whole if it can.
    init(path: String, enabled: Bool) {
        self.path = path
        var info = statvfs()
        if enabled, SystemCall.run("statvfs", { statvfs(Self.folder(of: path), &info) }) == 0, info.f_blocks > 0 {
            let total = UInt64(info.f_blocks).multipliedReportingOverflow(by: UInt64(info.f_frsize))
            size = min(16 << 20, max(256 << 10, total.overflow ? 16 << 20 : total.partialValue / 100))
        } else {
            size = 0
        }
        restore()
    }

    /// True when the reserve is whole (or there is none to keep).
    var isHeld: Bool { size == 0 || held.load(ordering: .acquiring) }

    /// Makes the reserve whole if it is not; false if the space is not there.
    @discardableResult
    func restore() -> Bool {
        guard !isHeld else { return true }
        guard let file = try? FileDescriptor.open(path, O_WRONLY | O_CREAT, permissions: 0o600) else { return false }
        let whole = file.closeAfter { file in
            if let status = try? file.status(), status.st_blocks * 512 >= Int(clamping: size) { return true }
            do throws(Errno) {
                try file.allocate(size: size)
                try file.sync()
                return true
            } catch {
                try? file.truncate(to: 0)
                return false
            }
        }
        if whole { held.store(true, ordering: .releasing) }
        return whole
    }

    /// Gives the reserve's blocks back to the file system; false if it was not held.
    func release() -> Bool {
        guard size > 0, held.exchange(false, ordering: .acquiringAndReleasing) else { return false }
        guard let file = try? FileDescriptor.open(path, O_WRONLY) else { return true }
        file.closeAfter { file in
            try? file.truncate(to: 0)
            try? file.sync()
        }
        return true
    }

    private static func folder(of path: String) -> String {
        path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
    }
}

import BlobCatalog
import BlobContent
import BlobCore
#if canImport(Glibc)
import Glibc
#endif

/// Free space: bytes and inodes, and the reserve kept for deletes.
extension BlobStore {
    /// Below this many free bytes the store is full whatever `--min-free-bytes` says: writes get
    /// 507 and `/readyz` 503.
    public static let fullBelowBytes: UInt64 = 64 * 1024

    /// The free inodes writes leave: 0.5 % of the file system's, at least 64.
    static func minimumFreeInodes(of total: UInt64) -> UInt64 {
        max(64, total / 200)
    }

    /// The least free space writes leave: `--min-free-bytes`, and at least `fullBelowBytes`.
    public var minimumFreeBytes: UInt64 { max(options.minFreeBytes, Self.fullBelowBytes) }

    /// The bytes free for blobd on the data directory's file system now (statvfs: the blocks
    /// available to an unprivileged writer), nil where the file system reports no size.
    public func freeBytes() -> UInt64? {
        FileSystem.space(at: directory)?.bytes
    }

    /// Throws `.insufficientStorage` if writing `needed` bytes would leave less than the minimum
    /// free (`--min-free-bytes`, and at least `fullBelowBytes`), if the inodes are nearly all
    /// used, or if the space reserve was given to deletes and there is no room to make it whole.
    public func checkFreeSpace(needed: UInt64 = 0) throws(StoreError) {
        guard reserve.restore() else { throw .insufficientStorage }
        guard let space = FileSystem.space(at: directory) else { return }
        let (total, overflow) = minimumFreeBytes.addingReportingOverflow(needed)
        if overflow || space.bytes < total { throw .insufficientStorage }
        if let inodes = space.inodes, inodes.free < Self.minimumFreeInodes(of: inodes.total) { throw .insufficientStorage }
    }
}

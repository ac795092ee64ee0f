import BlobCatalog
import BlobContent
import BlobCore
#if canImport(Glibc)
import Glibc
#endif


/// Versions of keys in versioned buckets (see `VersionIndex`): deletes that leave a delete
/// marker, removal of one version, reads and listings of versions. Writes keep the version they
/// replace through their condition's `versioning`, in `commit`.
extension BlobStore {
    /// The versioning of the bucket of `key`.
    public func versioning(of key: BlobKey) -> BucketVersioning {
        settings.versioning(of: Self.bucket(of: key))
    }

    /// The Object Lock configuration of the bucket of `key`; nil without Object Lock.
    public func objectLock(of key: BlobKey) -> ObjectLockConfiguration? {
        settings.objectLock(of: Self.bucket(of: key))
    }

    /// The bucket of `key`: its first segment.
    static func bucket(of key: BlobKey) -> Substring {
        let raw = key.rawValue
        return raw[..<(raw.firstIndex(of: "/") ?? raw.endIndex)]
    }

    /// The catalog's versions; every backend has them.
    var versionIndex: any VersionIndex {
        get throws(StoreError) {
            guard let versions = catalog.versions else { throw .index(.failed("this catalog keeps no versions")) }
            return versions
        }
    }

    /// Deletes `key` in a bucket whose versioning is `condition.versioning` (enabled or
    /// suspended): its current version is kept (or, the `null` one when suspended, goes) and a
    /// delete marker becomes its latest version. `events` (if any) reports the marker, in the
    /// same transaction.
    public func deleteMarking(_ key: BlobKey, if condition: WriteCondition, events: EventDraft? = nil) throws(StoreError) -> VersionRemoval {
        let marker = BlobRecord.deleteMarker(key, id: Self.newVersion(), versioned: condition.versioning == .enabled,
                                             modified: now())
        defer { index.forget(key) }
        var condition = condition
        condition.noncurrentDays = noncurrentDays(of: key)
        let removal = try versionIndex.deleteMarking(key, marker: marker, if: condition, events: events)
        for version in removal.garbage { discard(version) }
        return removal
    }

    /// Removes version `id` of `key` (`null` for the null version); its file goes.
    public func removeVersion(_ key: BlobKey, id: String, if condition: WriteCondition = .always,
                              events: EventDraft? = nil) throws(StoreError) -> VersionRemoval {
        defer { index.forget(key) }
        let removal = try versionIndex.removeVersion(key, id: id, if: condition, events: events)
        for version in removal.garbage { discard(version) }
        return removal
    }

    /// Sets the Object Lock of version `id` of `key` (nil: the current one); see `VersionIndex.setLock`.
    public func setLock(_ key: BlobKey, id: String?, retention: ObjectLock? = nil, legalHold: Bool? = nil,
                        bypassGovernance: Bool = false) throws(StoreError) -> BlobVersion {
        defer { index.forget(key) }
        return try versionIndex.setLock(key, id: id, retention: retention, legalHold: legalHold, bypassGovernance: bypassGovernance)
    }

    /// The Object Lock a new version of `record`'s key gets: the bucket's default retention,
    /// replaced by the one `asked` names (if it names a mode), with its legal hold.
    func lock(of record: BlobRecord, asked: ObjectLock?) -> ObjectLock {
        var lock = objectLock(of: record.key)?.defaultLock(at: now()) ?? record.lock
        if let asked {
            if asked.mode != nil { (lock.mode, lock.retainUntil) = (asked.mode, asked.retainUntil) }
            if asked.legalHold { lock.legalHold = true }
        }
        return lock
    }

    /// Version `id` of `key`, current or not.
    public func version(_ key: BlobKey, id: String) throws(StoreError) -> BlobVersion? {
        try versionIndex.version(key, id: id)
    }

    /// The newest noncurrent version of `key` (a delete marker when the key is deleted).
    public func newestNoncurrent(_ key: BlobKey) throws(StoreError) -> BlobVersion? {
        try versionIndex.newestNoncurrent(key)
    }

    /// Up to `limit` versions of keys starting with `prefix`, key by key, newest first.
    public func versions(prefix: [UInt8], after cursor: VersionCursor?, limit: Int) throws(StoreError) -> [BlobVersion] {
        try versionIndex.versions(prefix: prefix, after: cursor, limit: limit)
    }

    /// Opens the file of `version` (a data version): `.notFound` when it is gone (removed
    /// since it was looked up).
    public func open(version: BlobVersion) throws(StoreError) -> OpenBlob {
        guard !version.deleteMarker, let blob = try open(file: version.record) else { throw .notFound }
        return blob
    }
}

import BlobCore

/// What a change of a version's Object Lock decides, on every backend.
extension CatalogTransaction {
    /// Sets the Object Lock of version `id` of `key` as `VersionIndex.setLock` does, under the
    /// key's lock, retention checked at `now`.
    public func setLock(_ key: BlobKey, id: String?, retention: ObjectLock?, legalHold: Bool?, bypassGovernance: Bool,
                        now: Int64) throws(Failure) -> Result<BlobVersion, StoreError> {
        try lockKey(key)
        let current = try self.current(key)
        var target: BlobVersion
        var seq: Int64?
        if let current, id == nil || current.versionID == id {
            target = BlobVersion(record: current, latest: true)
        } else if let id, let found = try noncurrent(key, id: id), !found.version.deleteMarker {
            (seq, target) = (found.seq, found.version)
        } else {
            return .failure(.notFound)
        }
        var lock = target.record.lock
        if let retention {
            if let failure = lock.retentionChangeFailure(to: retention, at: now, bypassingGovernance: bypassGovernance) {
                return .failure(failure)
            }
            (lock.mode, lock.retainUntil) = (retention.mode, retention.retainUntil)
        }
        if let legalHold { lock.legalHold = legalHold }
        try setLock(lock, of: key, row: seq)
        target.record.lock = lock
        return .success(target)
    }
}

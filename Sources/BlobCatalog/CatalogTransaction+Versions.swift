import BlobCore

/// What delete markers and the removal of a version decide, and how the versions of keys are
/// walked, on every backend (see `VersionIndex`).
extension CatalogTransaction {
    // MARK: Delete markers

    /// Deletes `key` as `VersionIndex.deleteMarking` does, under the key's lock.
    public func deleteMarking(_ key: BlobKey, marker: BlobRecord, if condition: WriteCondition,
                              events: EventDraft?) throws(Failure) -> Result<VersionRemoval, StoreError> {
        try lockKey(key)
        let current = try self.current(key)
        if current == nil, condition.namesSomething { return .failure(.notFound) }
        if current != nil, let failure = condition.failure(for: current) { return .failure(failure) }
        let garbage = try markDeleted(current, marker: marker, versioning: condition.versioning,
                                      noncurrentDeadline: condition.noncurrentDeadline(at: marker.modified))
        if let events { try insertEvents(events, facts: nil, for: marker) }
        return .success(VersionRemoval(removed: current.map { BlobVersion(record: $0, latest: false) },
                                       marker: BlobVersion(record: marker, deleteMarker: true, latest: true), garbage: garbage))
    }

    /// Deletes the key of `marker` as a DELETE does in a bucket whose versioning is `versioning`
    /// (enabled or suspended), with the key's lock held: `current` (if any) becomes a noncurrent
    /// version or garbage, a suspended bucket's noncurrent `null` version goes, and `marker` is
    /// the latest version. Returns the versions made garbage (already recorded as such).
    /// `noncurrentDeadline` stamps the version made noncurrent; a marker left alone is stamped
    /// for the sweep at once.
    public func markDeleted(_ current: BlobRecord?, marker: BlobRecord, versioning: BucketVersioning,
                            noncurrentDeadline: Int64?) throws(Failure) -> [String] {
        let key = marker.key
        var garbage: [String] = []
        if let current {
            if versioning.keeps(current) { try archiveCurrent(key, sweepAt: noncurrentDeadline) } else { garbage.append(current.version) }
            try deleteCurrent(key)
        }
        if versioning == .suspended { garbage += try dropNullNoncurrent(key) }
        try insertMarker(marker)
        for version in garbage { try addGarbage(version) }
        try stampIfLoneMarker(key, at: marker.modified)
        return garbage
    }

    // MARK: Removing a version

    /// Removes version `id` of `key` as `VersionIndex.removeVersion` does, under the key's lock,
    /// Object Lock checked at `now`: a key left without a current record gets its newest
    /// remaining version as current, unless that is a delete marker.
    public func removeVersion(_ key: BlobKey, id: String, if condition: WriteCondition, events: EventDraft?,
                              now: Int64) throws(Failure) -> Result<VersionRemoval, StoreError> {
        try lockKey(key)
        let current = try self.current(key)
        let removal: VersionRemoval
        let removesCurrent = current?.versionID == id
        if let current, removesCurrent {
            if let failure = condition.failure(for: current) ?? condition.lockFailure(removing: current, at: now) {
                return .failure(failure)
            }
            try deleteCurrent(key)
            removal = VersionRemoval(removed: BlobVersion(record: current, latest: true), garbage: [current.version])
        } else {
            guard let found = try noncurrent(key, id: id) else { return .failure(.notFound) }
            let record = found.version.record
            if let failure = condition.failure(for: record) ?? condition.lockFailure(removing: record, at: now) {
                return .failure(failure)
            }
            var removed = found.version
            removed.latest = try isLatest(found, current: current)
            try deleteNoncurrent(found.seq)
            removal = VersionRemoval(removed: removed, garbage: found.version.deleteMarker ? [] : [record.version])
        }
        if current == nil || removesCurrent,
           let newest = try newestNoncurrent(key), !newest.version.deleteMarker {
            try promote(newest)
        }
        try stampIfLoneMarker(key, at: now)
        for version in removal.garbage { try addGarbage(version) }
        if let events, let removed = removal.removed { try insertEvents(events, facts: nil, for: removed.record) }
        return .success(removal)
    }

    /// True if noncurrent `row` is its key's latest version: no current record, and no newer row.
    private func isLatest(_ row: VersionRow, current: BlobRecord?) throws(Failure) -> Bool {
        guard current == nil else { return false }
        return try newestNoncurrent(row.version.record.key)?.seq == row.seq
    }

    // MARK: Walking versions

    /// Version `id` of `key` (`null` for the null version), current or not.
    public func version(_ key: BlobKey, id: String) throws(Failure) -> BlobVersion? {
        let current = try self.current(key)
        if let current, current.versionID == id { return BlobVersion(record: current, latest: true) }
        guard let found = try noncurrent(key, id: id) else { return nil }
        var version = found.version
        version.latest = try isLatest(found, current: current)
        return version
    }

    /// Up to `limit` versions of keys starting with `prefix`, after `cursor`, as
    /// `VersionIndex.versions` pages them: by key, each key's newest first.
    public func versions(prefix: [UInt8], after cursor: VersionCursor?, limit: Int) throws(Failure) -> [BlobVersion] {
        var out: [BlobVersion] = []
        var afterKey = cursor?.key
        if let cursor, let id = cursor.versionID, cursor.key.starts(with: prefix), let key = try? BlobKey(validating: cursor.key) {
            let all = try allVersions(of: key)
            if let index = all.firstIndex(where: { $0.id == id }) { out += all[(index + 1)...].prefix(limit) }
        }
        while out.count < limit {
            let keys = try versionedKeys(prefix: prefix, after: afterKey, limit: limit - out.count)
            guard let last = keys.last else { break }
            for bytes in keys {
                guard let key = try? BlobKey(validating: bytes) else { continue }
                out += try allVersions(of: key).prefix(limit - out.count)
                if out.count >= limit { break }
            }
            afterKey = last
        }
        return out
    }

    /// Every version of `key`, newest first: the current record, then the noncurrent ones.
    private func allVersions(of key: BlobKey) throws(Failure) -> [BlobVersion] {
        var out: [BlobVersion] = []
        if let current = try self.current(key) { out.append(BlobVersion(record: current, latest: true)) }
        for var version in try noncurrentVersions(of: key) {
            version.latest = out.isEmpty
            out.append(version)
        }
        return out
    }
}

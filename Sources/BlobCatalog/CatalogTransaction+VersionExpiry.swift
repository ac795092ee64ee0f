import BlobCore

/// What the lifecycle sweep of noncurrent versions and expired delete markers decides, on every
/// backend (see `VersionIndex.removeExpiredVersions`).
extension CatalogTransaction {
    /// One batch of the version sweep at `now`: each due row is decided by `DueVersion.decision`
    /// with the deadline `deadline` gives it; a removed one gets the event `events` drafts, and
    /// a delete marker it leaves alone is stamped `now`. A key another transaction holds waits
    /// for a later batch; in a shared catalog one node sweeps at a time.
    public func removeExpiredVersions(now: Int64, limit: Int, deadline: (DueVersion) -> Int64?,
                                      events: (BlobVersion) -> EventDraft?) throws(Failure) -> VersionExpirySweep {
        guard try claimSweep() else { return VersionExpirySweep(skipped: true) }
        let rows = try dueNoncurrent(now: now, limit: limit)
        var sweep = VersionExpirySweep(examined: rows.count)
        for (seq, found) in rows {
            guard let found else {
                try setSweep(ofRow: seq, to: nil)  // a row blobd cannot name: no longer found
                continue
            }
            guard try tryLockKey(found.record.key) else { continue }
            let due = try due(found, seq: seq)
            switch due.decision(deadline: deadline(due), now: now) {
            case .stamp(let next):
                try setSweep(ofRow: seq, to: next)
            case .remove:
                try deleteNoncurrent(seq)
                if !found.deleteMarker {
                    try addGarbage(found.record.version)
                    sweep.garbage.append(found.record.version)
                }
                if let draft = events(due.version) { try insertEvents(draft, facts: nil, for: found.record) }
                try stampIfLoneMarker(found.record.key, at: now)
                sweep.removed.append(due.version)
            }
        }
        return sweep
    }

    /// `found` (row `seq`) as the sweep decides it: when it stopped being current, and whether
    /// it is a delete marker left alone.
    private func due(_ found: BlobVersion, seq: Int64) throws(Failure) -> DueVersion {
        let succession = try succession(ofRow: seq, key: found.record.key, olderToo: found.deleteMarker)
        var version = found
        version.latest = succession.since == nil
        let lone = succession.since == nil && found.deleteMarker && !succession.hasOlder
        return DueVersion(version: version, noncurrentSince: succession.since, lone: lone)
    }
}

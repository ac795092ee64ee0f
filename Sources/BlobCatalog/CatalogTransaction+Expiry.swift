import BlobCore

/// What the expiry sweep of current records decides, on every backend (see `BlobIndex.removeExpired`).
extension CatalogTransaction {
    /// One batch of the expiry sweep at `now`: a due record whose deadline under the rules in
    /// force (`deadline`) has come is removed, or, in a versioned bucket (`versioned`), deleted
    /// as a DELETE there does; the others get their deadline again. A key another transaction
    /// holds waits for a later batch; in a shared catalog one node sweeps at a time.
    public func removeExpired(now: Int64, limit: Int, deadline: (BlobRecord) -> Int64?, versioned: (BlobRecord) -> ExpiryDeletion?,
                              events: (BlobRecord) -> EventDraft?) throws(Failure) -> ExpirySweep {
        guard try claimSweep() else { return ExpirySweep(skipped: true) }
        let due = try dueCurrent(now: now, limit: limit)
        var removed: [BlobRecord] = []
        var garbage: [String] = []
        for (key, record) in due {
            guard let record else {
                // A row blobd cannot name: it keeps no deadline, so the sweep stops finding it.
                try setExpiry(ofKey: key, to: nil)
                continue
            }
            let next = deadline(record)
            guard let next, next <= now else {
                try setExpiry(ofKey: key, to: next)
                continue
            }
            if let deletion = versioned(record) {
                // As a DELETE in a versioned bucket: the record is kept, a delete marker is the
                // latest. A key another transaction holds waits (waiting could deadlock).
                guard try tryLockKey(record.key) else { continue }
                let noncurrent = deletion.noncurrentDays.map { LifecycleRule.nextMidnight(deletion.marker.modified + $0 * 86_400) }
                garbage += try markDeleted(record, marker: deletion.marker, versioning: deletion.versioning, noncurrentDeadline: noncurrent)
                if let draft = events(deletion.marker) { try insertEvents(draft, facts: nil, for: deletion.marker) }
            } else {
                try deleteCurrent(record.key)
                try addGarbage(record.version)
                garbage.append(record.version)
                if let draft = events(record) { try insertEvents(draft, facts: nil, for: record) }
            }
            removed.append(record)
        }
        return ExpirySweep(removed: removed, examined: due.count, garbage: garbage)
    }
}

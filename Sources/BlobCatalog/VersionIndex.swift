import BlobCore

/// The versions of keys in versioned buckets. The `blobs` table stays the current record of
/// each key; noncurrent versions and delete markers live beside it (`blob_versions`). A commit
/// whose condition says `versioning` keeps the record it replaces there, in the same
/// transaction (`BlobIndex.commit`); the operations below delete keys and remove versions.
/// Each runs in one transaction, decides its condition inside it, and is durable when it
/// returns. The files of the versions a removal leaves unnamed are garbage, as with `remove`.
public protocol VersionIndex: Sendable {
    /// Deletes `key` in a bucket whose versioning is `condition.versioning` (enabled or
    /// suspended): the current record (if any, and if `condition` holds for it) becomes a
    /// noncurrent version (or garbage, for the `null` version when suspended), and `marker`,
    /// a delete marker, becomes the latest version. When suspended, the key's noncurrent
    /// `null` version goes too. `.notFound` only when the condition names something and the key
    /// has no current record. The event `events` drafts (`ObjectRemoved:DeleteMarkerCreated`),
    /// if any, reports the marker and is written in the same transaction.
    func deleteMarking(_ key: BlobKey, marker: BlobRecord, if condition: WriteCondition,
                       events: EventDraft?) throws(StoreError) -> VersionRemoval
    /// Removes version `id` (`null` for the null version) of `key`, current or not, if
    /// `condition` holds for it; a data version's file becomes garbage. When the key is left
    /// without a current record, its newest remaining version becomes current unless that is a
    /// delete marker. `.notFound` when the key has no such version. The event `events` drafts,
    /// if any, reports the version removed and is written in the same transaction.
    func removeVersion(_ key: BlobKey, id: String, if condition: WriteCondition, events: EventDraft?) throws(StoreError) -> VersionRemoval
    /// Sets the Object Lock of version `id` of `key` (`null` for the null version; nil for the
    /// current record), in one transaction on the server's clock: `retention` when given (its
    /// mode and date; `ObjectLock.unlocked` removes it) and `legalHold` when given. A change that
    /// shortens, removes or weakens a retention in force is `.objectLocked` for COMPLIANCE, and
    /// for GOVERNANCE unless `bypassGovernance`. `.notFound` when there is no such data version.
    /// Returns the version with its lock as it is now.
    func setLock(_ key: BlobKey, id: String?, retention: ObjectLock?, legalHold: Bool?,
                 bypassGovernance: Bool) throws(StoreError) -> BlobVersion
    /// Version `id` of `key` (`null` for the null version), current or not.
    func version(_ key: BlobKey, id: String) throws(StoreError) -> BlobVersion?
    /// The newest noncurrent version of `key` (a delete marker when the key is deleted).
    func newestNoncurrent(_ key: BlobKey) throws(StoreError) -> BlobVersion?
    /// Up to `limit` versions of keys starting with `prefix`, in bytewise key order and, per
    /// key, newest first (the current record, then the noncurrent versions), after `cursor`.
    func versions(prefix: [UInt8], after cursor: VersionCursor?, limit: Int) throws(StoreError) -> [BlobVersion]
    /// One batch of the lifecycle sweep of versions, in one transaction: up to `limit` rows of
    /// `blob_versions` due at `now`, each decided by `DueVersion.decision` with the deadline
    /// `deadline` gives it under the rules in force; a removed one gets the event `events`
    /// drafts (`LifecycleExpiration:Delete`) in the same transaction, and a delete marker it
    /// leaves alone is stamped `now`. In a shared catalog one node sweeps at a time (the others
    /// are `skipped`).
    func removeExpiredVersions(now: Int64, limit: Int, deadline: (DueVersion) -> Int64?,
                               events: (BlobVersion) -> EventDraft?) throws(StoreError) -> VersionExpirySweep
    /// Stamps up to `limit` rows of `blob_versions` of keys starting with `prefix`, after
    /// `cursor`, to be looked at by the sweep at `time` (after a change of the bucket's rules);
    /// returns where to go on from, nil when done.
    func reviewVersions(prefix: [UInt8], after cursor: VersionRowCursor?, limit: Int, at time: Int64) throws(StoreError) -> VersionRowCursor?
}

extension VersionIndex {
    /// `deleteMarking` without an event.
    public func deleteMarking(_ key: BlobKey, marker: BlobRecord, if condition: WriteCondition) throws(StoreError) -> VersionRemoval {
        try deleteMarking(key, marker: marker, if: condition, events: nil)
    }

    /// `removeVersion` without an event.
    public func removeVersion(_ key: BlobKey, id: String, if condition: WriteCondition) throws(StoreError) -> VersionRemoval {
        try removeVersion(key, id: id, if: condition, events: nil)
    }
}

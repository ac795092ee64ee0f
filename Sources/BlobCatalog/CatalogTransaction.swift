import BlobCore

/// One transaction of a catalog backend, seen as the row operations that the catalog's
/// decisions are written over once (`CatalogTransaction+Commit.swift`, `+Versions`,
/// `+ObjectLock`, `+Expiry`, `+VersionExpiry`), as GRDB writes its migrations once over
/// `DatabaseWriter`. A backend implements each requirement in its own SQL and row codec, and
/// decides nothing: what a commit keeps, which version becomes current, what a lock forbids is
/// the decisions' business.
///
/// The tables are the current records (`blobs`, one row per key) and the noncurrent versions
/// and delete markers (`blob_versions`, rows numbered by `seq` in the order they were made).
/// A transaction is used by one thread, inside its backend's `CatalogBackend.writing` or
/// `reading`; in `reading`, writes are not made and reads take no locks.
public protocol CatalogTransaction {
    /// What the backend's statements throw (the backend maps it to a `StoreError`).
    associatedtype Failure: Error

    // MARK: Current records

    /// The current record of `key` (in a write, its row locked until the transaction ends).
    func current(_ key: BlobKey) throws(Failure) -> BlobRecord?
    /// Inserts `record` as its key's current record; false if a row another transaction
    /// committed meanwhile is there (then `current` reads that row).
    func insertCurrent(_ record: BlobRecord) throws(Failure) -> Bool
    /// Overwrites its key's current record with `record`.
    func updateCurrent(_ record: BlobRecord) throws(Failure)
    /// Deletes the current record of `key`.
    func deleteCurrent(_ key: BlobKey) throws(Failure)
    /// Marks tus upload `id` as completed into `record`.
    func completeUpload(_ id: String, into record: BlobRecord) throws(Failure)
    /// Up to `limit` current rows whose expiry deadline is at or before `now`, soonest first, by
    /// key; the record is nil for a row blobd cannot name (reported as such).
    func dueCurrent(now: Int64, limit: Int) throws(Failure) -> [(key: [UInt8], record: BlobRecord?)]
    /// Sets the expiry deadline of the current row at `key` (nil: none).
    func setExpiry(ofKey key: [UInt8], to deadline: Int64?) throws(Failure)

    // MARK: Noncurrent versions and delete markers

    /// Copies the current row of `key` into `blob_versions` as its newest noncurrent version,
    /// for the lifecycle sweep to look at at `sweepAt` (nil: never).
    func archiveCurrent(_ key: BlobKey, sweepAt: Int64?) throws(Failure)
    /// Inserts the delete marker `marker` as its key's newest noncurrent row.
    func insertMarker(_ marker: BlobRecord) throws(Failure)
    /// The newest noncurrent row of `key`.
    func newestNoncurrent(_ key: BlobKey) throws(Failure) -> VersionRow?
    /// The noncurrent row of version `id` of `key` (`null`: the newest one without an id).
    func noncurrent(_ key: BlobKey, id: String) throws(Failure) -> VersionRow?
    /// Every noncurrent version of `key`, newest first, none of them latest.
    func noncurrentVersions(of key: BlobKey) throws(Failure) -> [BlobVersion]
    /// Up to `limit` keys with a current record or a noncurrent row, starting with `prefix`, in
    /// bytewise order, after `after` when it sorts at or past `prefix`.
    func versionedKeys(prefix: [UInt8], after: [UInt8]?, limit: Int) throws(Failure) -> [[UInt8]]
    /// Deletes noncurrent row `seq`.
    func deleteNoncurrent(_ seq: Int64) throws(Failure)
    /// Makes noncurrent row `row` its key's current record (the key has none).
    func promote(_ row: VersionRow) throws(Failure)
    /// Deletes the noncurrent `null` versions of `key`; returns the file versions among them.
    func dropNullNoncurrent(_ key: BlobKey) throws(Failure) -> [String]
    /// Stamps the newest noncurrent row of `key` for the sweep at `sweepAt` if it is a delete marker.
    func stampNewestMarker(_ key: BlobKey, sweepAt: Int64) throws(Failure)
    /// Stamps the delete marker of `key` for the sweep at `time` when it is the key's only
    /// version left (no current record, no other noncurrent row).
    func stampIfLoneMarker(_ key: BlobKey, at time: Int64) throws(Failure)
    /// Sets when the sweep looks at noncurrent row `seq` (nil: never).
    func setSweep(ofRow seq: Int64, to time: Int64?) throws(Failure)
    /// Sets the Object Lock of `key`'s noncurrent row `seq`, or of its current record when nil.
    func setLock(_ lock: ObjectLock, of key: BlobKey, row seq: Int64?) throws(Failure)
    /// Up to `limit` noncurrent rows due for the sweep at `now`, soonest first; the version is
    /// nil for a row blobd cannot name.
    func dueNoncurrent(now: Int64, limit: Int) throws(Failure) -> [(seq: Int64, version: BlobVersion?)]
    /// When noncurrent row `seq` of `key` stopped being current (the time of the next newer
    /// row, else of the current record; nil if it is still the latest), and, when `olderToo`,
    /// whether the key has older rows.
    func succession(ofRow seq: Int64, key: BlobKey, olderToo: Bool) throws(Failure) -> (since: Int64?, hasOlder: Bool)

    // MARK: Bookkeeping

    /// Records the file of `version` as garbage (no longer named by any row).
    func addGarbage(_ version: String) throws(Failure)
    /// Writes the events `draft` drafts about `record` (their `facts`, or the draft's own now)
    /// into the outbox.
    func insertEvents(_ draft: EventDraft, facts: [EventFacts]?, for record: BlobRecord) throws(Failure)

    // MARK: Concurrency (for a catalog several nodes share)

    /// Waits for, and holds until the transaction ends, the lock of `key`'s versioned
    /// operations (the key's row may not exist).
    func lockKey(_ key: BlobKey) throws(Failure)
    /// Takes the lock of `key` as `lockKey` does if no other transaction holds it; false if one does.
    func tryLockKey(_ key: BlobKey) throws(Failure) -> Bool
    /// True if this transaction may run an expiry sweep: no other node's transaction runs one.
    func claimSweep() throws(Failure) -> Bool
}

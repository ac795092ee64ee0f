import Foundation
import BlobCore
import BucketSettings
import Dispatch

/// The outcome of a conditional commit.
public enum IndexCommit: Sendable, Equatable {
    /// The key was new.
    case created
    /// The key held `previous`, which the new record replaced.
    case replaced(previous: BlobRecord)
}

/// The key → record map. SQLite is the embedded default; the seam lets several blobd nodes
/// share one index later. Conditions are decided inside the index's own transaction.
public protocol BlobIndex: Sendable {
    /// The record at `key`, if any.
    func record(for key: BlobKey) throws(StoreError) -> BlobRecord?
    /// The record at `key`, if any, handed to `completion` on whichever thread read it (maybe
    /// before returning); `completion` must not block. The read sees every commit acknowledged
    /// before this call. For indexes across a network, so that waiting takes no thread.
    func record(for key: BlobKey, then completion: @escaping @Sendable (Result<BlobRecord?, StoreError>) -> Void)
    /// Commits `batch` in one transaction, in order, and returns one outcome per request, in
    /// the batch's order. Each request stores its record at its key if its condition holds
    /// (`WriteCondition.holds`) for the current record (nil when absent), as left by the
    /// batch's earlier requests: the second of two requests for one key sees the first. A
    /// condition that fails fails only its request (`.preconditionFailed`). In the same
    /// transaction a request marks the resumable upload `completingUpload` (if any) complete at
    /// its key. Conditions are evaluated inside the transaction, once per attempt: a shared
    /// index evaluates them again when it runs the transaction again (another node changed a
    /// key between its read and its write). Durable when this returns. A failure of the
    /// catalog throws, and then nothing of the batch is stored. `GroupCommit` gathers
    /// concurrent commits into batches.
    func commit(_ batch: [CommitRequest]) throws(StoreError) -> [Result<IndexCommit, StoreError>]
    /// Runs after the outcomes of each batch of a `GroupCommit` are handed out, off the
    /// callers' paths (SQLite checkpoints its WAL there). Does nothing by default.
    func batchAnswered()
    /// Removes the record at `key` if `condition` holds for it; returns the removed record.
    /// Throws `.notFound` when absent and `.preconditionFailed` when the condition fails. In the
    /// same transaction it writes the outbox rows of `events` (if any) reporting the removal.
    func remove(_ key: BlobKey, if condition: WriteCondition, events: EventDraft?) throws(StoreError) -> BlobRecord
    /// Up to `limit` records in bytewise key order whose keys start with `prefix` and sort after `after`.
    func list(prefix: [UInt8], after: [UInt8]?, limit: Int) throws(StoreError) -> [BlobRecord]
    /// True if some record has this version.
    func containsVersion(_ version: String) throws(StoreError) -> Bool
    /// Every version the index names, for fsck.
    func allVersions() throws(StoreError) -> Set<String>
    /// The versions the index names whose files are in `blobs/FOLDER` (versions starting with
    /// those two hex digits).
    func versions(inFolder folder: String) throws(StoreError) -> Set<String>
    /// Number of blobs and their total size.
    func totals() throws(StoreError) -> (count: Int, bytes: UInt64)
    /// Drops whatever is cached about `key` after another face of the catalog changed it
    /// (`VersionIndex`). Does nothing by default.
    func forget(_ key: BlobKey)

    /// One batch of the expiry sweep, in one transaction: up to `limit` records whose stamped
    /// deadline (`expires_at`) is at or before `now`, found through the index on it. Each is
    /// asked `deadline` (its deadline under the rules in force): one at or before `now` is
    /// deleted (its version joins the garbage, and the event `events` drafts for it, if any, is
    /// written to the outbox in the same transaction), any other is stamped with the deadline it gives. A shared index lets one
    /// node sweep at a time (`skipped` for the others) and never deletes a row twice. A record
    /// for which `versioned` gives a deletion (its bucket is versioned) is deleted as a DELETE
    /// does there (`ExpiryDeletion`), and its event reports the marker.
    func removeExpired(now: Int64, limit: Int, deadline: (BlobRecord) -> Int64?, versioned: (BlobRecord) -> ExpiryDeletion?,
                       events: (BlobRecord) -> EventDraft?) throws(StoreError) -> ExpirySweep
    /// Stamps each row still at the stamp's version with its `expiresAt`, in one transaction.
    func stampExpiry(_ stamps: [ExpiryStamp]) throws(StoreError)
}

/// One commit of a batch (`BlobIndex.commit(_:)`): a record, the condition it is stored on, and
/// the resumable upload it completes, if any.
public struct CommitRequest: Sendable, Equatable {
    /// The record to store at its key.
    public let record: BlobRecord
    /// The id of the resumable upload this commit marks complete, if any.
    public let completingUpload: String?
    /// What must hold for the key's current record.
    public let condition: WriteCondition
    /// The events reporting this commit, written to the outbox in its transaction when it
    /// succeeds (`EventOutbox`); nil when no subscription matches.
    public let events: EventDraft?
    /// The facts of `events`, one per target, made when the request is made (on the request's
    /// thread rather than in the commit's transaction, which one thread runs for a whole batch).
    public let facts: [EventFacts]

    /// A request to store `record` if `condition` holds, completing `completingUpload`; its
    /// events (if any) are timed by `clock`, which is read only when there are some.
    public init(_ record: BlobRecord, completingUpload: String? = nil, if condition: WriteCondition, events: EventDraft? = nil,
                clock: WallClock = .system) {
        self.record = record
        self.completingUpload = completingUpload
        self.condition = condition
        self.events = events
        facts = events?.facts(for: record, millis: clock.milliseconds) ?? []
    }
}

extension BlobIndex {
    /// One batch of the expiry sweep that writes no event.
    public func removeExpired(now: Int64, limit: Int, deadline: (BlobRecord) -> Int64?) throws(StoreError) -> ExpirySweep {
        try removeExpired(now: now, limit: limit, deadline: deadline, versioned: { _ in nil }, events: { _ in nil })
    }

    /// One batch of the expiry sweep in unversioned buckets.
    public func removeExpired(now: Int64, limit: Int, deadline: (BlobRecord) -> Int64?,
                              events: (BlobRecord) -> EventDraft?) throws(StoreError) -> ExpirySweep {
        try removeExpired(now: now, limit: limit, deadline: deadline, versioned: { _ in nil }, events: events)
    }

    /// Removes the record at `key` if `condition` holds, reporting no event.
    public func remove(_ key: BlobKey, if condition: WriteCondition) throws(StoreError) -> BlobRecord {
        try remove(key, if: condition, events: nil)
    }

    /// Nothing to do after a batch.
    public func batchAnswered() {}

    /// Nothing cached.
    public func forget(_ key: BlobKey) {}

    /// Commits one request as a batch of its own, and returns its outcome.
    public func commit(_ request: CommitRequest) throws(StoreError) -> IndexCommit {
        let results = try commit([request])
        guard results.count == 1, let result = results.first else { throw .index(.failed("no outcome for the commit")) }
        return try result.get()
    }

    /// An index on the local disk reads at once.
    public func record(for key: BlobKey, then completion: @escaping @Sendable (Result<BlobRecord?, StoreError>) -> Void) {
        completion(Result { () throws(StoreError) in try record(for: key) })
    }
}

/// Calls `start` with a completion and waits until it is called (on any thread, maybe before
/// `start` returns); returns its result.
public func waitFor<Value>(_ start: (@escaping (Result<Value, StoreError>) -> Void) -> Void) throws(StoreError) -> Value {
    let outcome = Outcome<Value>()
    start { result in
        outcome.result = result
        outcome.done.signal()
    }
    outcome.done.wait()
    return try outcome.result.get()
}

/// A result handed from the thread that completes to the one that waits. `@unchecked Sendable`:
/// `result` is written before `done` is signalled and read only after.
private final class Outcome<Value>: @unchecked Sendable {
    var result: Result<Value, StoreError> = .failure(.index(.failed("not completed")))
    let done = DispatchSemaphore(value: 0)
}

/// The buckets of the S3 dialect, recorded in the index.
public protocol BucketIndex: Sendable {
    /// Records a bucket with its first settings (versioning, Object Lock, canned ACL), in one
    /// transaction that also bumps the access version when there are settings; false (and
    /// nothing written) if a bucket of its name already exists.
    func createBucket(_ bucket: Bucket, settings: [BucketAccessSetting]) throws(StoreError) -> Bool
    /// A bucket by name, nil if there is none.
    func bucket(_ name: String) throws(StoreError) -> Bucket?
    /// Every bucket, by name.
    func buckets() throws(StoreError) -> [Bucket]
    /// Forgets an empty bucket: `.bucketNotFound`, `.bucketNotEmpty` otherwise.
    func removeBucket(_ name: String) throws(StoreError)
}

extension BucketIndex {
    /// Records a bucket without settings; false if one of its name already exists.
    public func createBucket(_ bucket: Bucket) throws(StoreError) -> Bool {
        try createBucket(bucket, settings: [])
    }
}

/// The resumable uploads (tus) the index keeps, so they survive restarts.
public protocol UploadIndex: Sendable {
    /// Adds a new upload of `owner` (see `MultipartIndex.insertMultipart`).
    func insert(_ upload: UploadRecord, owner: String?, limit: Int) throws(StoreError)
    /// The upload with this id, if any.
    func upload(_ id: String) throws(StoreError) -> UploadRecord?
    /// Whom the upload counts against, as `insert` was told (nil for none or no such upload).
    func owner(ofUpload id: String) throws(StoreError) -> String?
    /// Saves an upload's progress (offset, hash state, length, expiry).
    func save(_ upload: UploadRecord) throws(StoreError)
    /// Forgets an upload.
    func removeUpload(_ id: String) throws(StoreError)
    /// Ids of uploads not complete yet.
    func unfinishedUploads() throws(StoreError) -> [String]
    /// Ids of uploads whose expiry is at or before `now`.
    func expiredUploads(now: Int64) throws(StoreError) -> [String]
}

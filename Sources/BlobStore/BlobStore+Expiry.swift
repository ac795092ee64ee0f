import BlobCatalog
import BlobCore
import Dispatch
import Foundation

/// Expiry: a blob's own deadline (`?ttl=`, tus `ttl`) and its bucket's lifecycle rules.
///
/// A blob past its deadline is gone for every reader at once (`visible`: lookups, opens,
/// listings, deletes), decided with the rules in force on this node. The sweep then deletes it
/// through the index on the stamped deadline (`expires_at`): each commit stamps the earlier of
/// the blob's own deadline and its rules' (`stamped`), and a change of a bucket's rules stamps
/// its blobs again, in batches (`restampExpiry`), so that the sweep's cost follows the number of
/// blobs due, not the number stored. The sweep checks each row it finds against the rules in
/// force before deleting it, so a rule removed while the stamps catch up deletes nothing.
extension BlobStore {
    /// Sets how the sweep drafts the event named (`LifecycleExpiration:Delete`, or
    /// `LifecycleExpiration:DeleteMarkerCreated` in a versioned bucket) of a blob it removes (nil
    /// when no subscription wants one); each is written in the sweep's transaction.
    public func setExpiryEvents(_ draft: @escaping @Sendable (String, BlobKey) -> EventDraft?) {
        expiryEvents.withLock { $0 = draft }
    }

    /// The lifecycle rules in force.
    public var lifecycleRules: LifecycleRules { settings.lifecycle }

    /// When `record` stops being readable under the rules in force; nil if never.
    public func deadline(of record: BlobRecord) -> Int64? {
        if record.ttlExpires == nil && settings.lifecycle.isEmpty { return nil }
        return lifecycleRules.deadline(of: record)
    }

    /// The lifecycle expiration of `record` (`x-amz-expiration`): the deadline and the rule's id.
    public func expiration(of record: BlobRecord) -> (deadline: Int64, ruleID: String)? {
        let rules = lifecycleRules
        return rules.isEmpty ? nil : rules.expiration(of: record.key, created: record.modified)
    }

    /// `record` while it is before its deadline; nil once past it.
    func visible(_ record: BlobRecord) -> BlobRecord? {
        guard let deadline = deadline(of: record) else { return record }
        return deadline > now() ? record : nil
    }

    /// `record` with the deadline the sweep finds it by.
    func stamped(_ record: BlobRecord) -> BlobRecord {
        var record = record
        record.expiresAt = deadline(of: record)
        return record
    }

    /// One pass of the expiry sweep: batches of `batch` blobs due, through the index on their
    /// deadline, until none is due (or `maxBatches`); their files go as a replaced blob's do (at
    /// once on a single node, after the grace period in a cluster). In a cluster one node sweeps
    /// at a time; the others' passes do nothing. Returns how many blobs were removed.
    @discardableResult
    public func removeExpiredBlobs(batch: Int = 500, maxBatches: Int = 20) -> Int {
        var total = 0
        for _ in 0..<maxBatches {
            let rules = lifecycleRules
            let draft = expiryEvents.withLock { $0 }
            let sweep: ExpirySweep
            do {
                sweep = try index.removeExpired(now: now(), limit: batch, deadline: { rules.deadline(of: $0) },
                                                versioned: expiryDeletion, events: { record in
                    draft?(versioning(of: record.key) == .unversioned ? "LifecycleExpiration:Delete"
                                                                       : "LifecycleExpiration:DeleteMarkerCreated", record.key)
                })
            } catch {
                logger.warning("The expiry sweep cannot read the index; it tries again later", metadata: ["error": "\(error)"])
                break
            }
            for version in sweep.garbage { discard(version) }
            total += sweep.removed.count
            if sweep.skipped || sweep.examined < batch { break }
        }
        if total > 0 { logger.info("Expired blobs removed", metadata: ["blobs.count": .stringConvertible(total)]) }
        return total
    }

    /// How the sweep removes `record` when its bucket is versioned: as a DELETE there does,
    /// leaving a delete marker (with an id when enabled, `null` when suspended); nil when the
    /// bucket is unversioned.
    private func expiryDeletion(_ record: BlobRecord) -> ExpiryDeletion? {
        let versioning = versioning(of: record.key)
        guard versioning != .unversioned else { return nil }
        let marker = BlobRecord.deleteMarker(record.key, id: Self.newVersion(), versioned: versioning == .enabled,
                                             modified: now())
        return ExpiryDeletion(versioning: versioning, marker: marker, noncurrentDays: noncurrentDays(of: record.key))
    }

    /// Stamps every blob of `bucket` with its deadline under the rules in force, `batch` rows a
    /// transaction, after the bucket's lifecycle rules changed. Returns how many rows changed.
    @discardableResult
    public func restampExpiry(bucket: String, batch: Int = 500) throws(StoreError) -> Int {
        let prefix = Array((bucket + "/").utf8)
        var cursor: [UInt8]?
        var changed = 0
        while true {
            let page = try index.list(prefix: prefix, after: cursor, limit: batch)
            let rules = lifecycleRules
            let stamps = page.compactMap { record -> ExpiryStamp? in
                let deadline = rules.deadline(of: record)
                return deadline == record.expiresAt ? nil : ExpiryStamp(key: record.key, version: record.version, expiresAt: deadline)
            }
            try index.stampExpiry(stamps)
            changed += stamps.count
            guard page.count == batch, let last = page.last else { break }
            cursor = last.key.bytes
        }
        try reviewVersions(prefix: prefix, batch: batch)
        return changed
    }

    /// `restampExpiry` on the store's `background` thread (one restamp at a time, in the order
    /// the rules changed), logging a failure: the reads decide with the rules in force
    /// meanwhile, and a blob left with an old stamp is checked again when the sweep finds it.
    public func restampExpiryInBackground(bucket: String) {
        background.submit { [self] in
            do throws(StoreError) {
                let changed = try restampExpiry(bucket: bucket)
                logger.info("Expiry deadlines stamped after a lifecycle change",
                            metadata: ["bucket": "\(bucket)", "blobs.count": .stringConvertible(changed)])
            } catch {
                logger.warning("Cannot stamp the expiry deadlines of a bucket; its blobs expire on reads, the sweep may miss some",
                               metadata: ["bucket": "\(bucket)", "error": "\(error)"])
            }
        }
    }

    /// When an unfinished multipart upload of `key` started at `created` expires if nothing more
    /// arrives from `now`: idle for `--upload-expiry`, or its bucket's AbortIncompleteMultipartUpload
    /// rule, whichever comes first.
    func multipartDeadline(key: BlobKey, created: Int64, now: Int64, lifetime: Int64) -> Int64 {
        let idle = now + lifetime
        return min(idle, lifecycleRules.abortDeadline(of: key, initiated: created) ?? idle)
    }

    /// The time to live a tus upload's metadata gives (`ttl`, base64 of a duration); nil when none
    /// or unreadable (the creation refused an unreadable one).
    static func tusTimeToLive(_ metadata: String) -> Int64? {
        for member in metadata.split(separator: ",") {
            let parts = member.split(separator: " ", omittingEmptySubsequences: true)
            guard parts.count == 2, parts[0] == "ttl", let data = Data(base64Encoded: String(parts[1])) else { continue }
            return ExpiryDuration.parse(String(decoding: data, as: UTF8.self))
        }
        return nil
    }
}

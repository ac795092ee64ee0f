import BlobCatalog
import BlobCore
import Foundation

/// Lifecycle rules over versions: NoncurrentVersionExpiration (a version removed NoncurrentDays
/// after it stopped being current, rounded up to midnight UTC) and ExpiredObjectDeleteMarker (a
/// delete marker that is its key's only version left is removed). The catalog finds the rows due
/// through `blob_versions.sweep_at` (see `DueVersion`): a version is stamped with its deadline by
/// the commit or delete that makes it noncurrent, a lone delete marker when it is left alone,
/// and every version of a bucket when its rules change; a version under Object Lock is never
/// removed, only looked at again when its lock may have ended.
extension BlobStore {
    /// The NoncurrentDays of the rules in force that match `key`, for the condition of a write or
    /// delete that may make a version of it noncurrent.
    func noncurrentDays(of key: BlobKey) -> Int64? {
        settings.lifecycle.noncurrentDays(of: key)
    }

    /// When the row `due` describes is removed under `rules`: a noncurrent version by its
    /// NoncurrentDays, a lone delete marker at once when a rule removes expired ones; nil never.
    static func deadline(of due: DueVersion, rules: LifecycleRules, now: Int64) -> Int64? {
        let key = due.version.record.key
        if let since = due.noncurrentSince { return rules.noncurrentDeadline(of: key, since: since) }
        return due.lone && rules.removesExpiredDeleteMarkers(of: key) ? now : nil
    }

    /// One pass of the version sweep: batches of `batch` rows due, until none is due (or
    /// `maxBatches`); a removed version's file goes as a replaced blob's does, and each removal
    /// has its `s3:LifecycleExpiration:Delete` event (naming the version) in its transaction. In a
    /// cluster one node sweeps at a time. Returns how many versions and markers were removed.
    @discardableResult
    public func removeExpiredVersions(batch: Int = 500, maxBatches: Int = 20) -> Int {
        var total = 0
        for _ in 0..<maxBatches {
            let rules = lifecycleRules
            let draft = expiryEvents.withLock { $0 }
            let sweep: VersionExpirySweep
            do {
                let now = self.now()
                sweep = try versionIndex.removeExpiredVersions(now: now, limit: batch, deadline: { Self.deadline(of: $0, rules: rules, now: now) },
                                                               events: { draft?(NoncurrentExpirationEvent.name, $0.record.key) })
            } catch {
                logger.warning("The version sweep cannot read the index; it tries again later", metadata: ["error": "\(error)"])
                break
            }
            for version in sweep.garbage { discard(version) }
            total += sweep.removed.count
            // A removal may have left a delete marker alone, stamped due now: the next batch finds it.
            if sweep.skipped || (sweep.examined < batch && sweep.removed.isEmpty) { break }
        }
        if total > 0 { logger.info("Expired versions removed", metadata: ["versions.count": .stringConvertible(total)]) }
        return total
    }

    /// Stamps every noncurrent version and delete marker of keys starting with `prefix` for the
    /// sweep now, `batch` rows a transaction (after their bucket's rules changed): the sweep
    /// then gives each its deadline under the rules in force, or removes it.
    func reviewVersions(prefix: [UInt8], batch: Int) throws(StoreError) {
        let now = self.now()
        var cursor: VersionRowCursor?
        repeat {
            cursor = try versionIndex.reviewVersions(prefix: prefix, after: cursor, limit: batch, at: now)
        } while cursor != nil
    }
}

import BlobCore

/// A row of `blob_versions` the lifecycle sweep found due (its `sweep_at` passed), as the
/// backend sees it inside the sweep's transaction: the version, when it stopped being current,
/// and whether it is an expired object delete marker.
///
/// `blob_versions.sweep_at` (indexed) is when the sweep looks at a row next: a version made noncurrent
/// under a NoncurrentVersionExpiration rule is stamped with its deadline by the commit or delete
/// that makes it noncurrent (`WriteCondition.noncurrentDays`); a delete marker left as its key's
/// only version is stamped with the time it became so; a change of a bucket's rules stamps its
/// rows with the time of the change (`VersionIndex.reviewVersions`), and the sweep then puts each
/// right. So the sweep's cost follows the rows due, not the rows stored.
public struct DueVersion: Sendable, Equatable {
    /// The version; `latest` when nothing of its key is newer (a delete marker over no current record).
    public var version: BlobVersion
    /// When it stopped being current: the time of the version that followed it (nil while latest).
    public var noncurrentSince: Int64?
    /// A delete marker that is its key's only version (S3's expired object delete marker).
    public var lone: Bool

    public init(version: BlobVersion, noncurrentSince: Int64?, lone: Bool) {
        self.version = version
        self.noncurrentSince = noncurrentSince
        self.lone = lone
    }

    /// What the sweep does with the row given its `deadline` under the rules in force (nil:
    /// none) at `now`. Only a noncurrent version or a lone delete marker may go; a version under
    /// Object Lock never does (it is looked at again when its lock may have ended); anything
    /// else is stamped with its deadline.
    public func decision(deadline: Int64?, now: Int64) -> VersionExpiryDecision {
        let removable = noncurrentSince != nil || lone
        guard removable, let deadline else { return .stamp(nil) }
        guard deadline <= now else { return .stamp(deadline) }
        if !version.deleteMarker, version.record.lock.removalFailure(at: now, bypassingGovernance: false) != nil {
            return .stamp(version.record.lock.nextRemovalCheck(after: now))
        }
        return .remove
    }
}

/// See `DueVersion.decision(deadline:now:)`.
public enum VersionExpiryDecision: Sendable, Equatable {
    /// Remove the row (a data version's file becomes garbage).
    case remove
    /// Keep it, to be looked at again at this time (nil: never, until something stamps it).
    case stamp(Int64?)
}

/// What one batch of the version sweep did (`VersionIndex.removeExpiredVersions`).
public struct VersionExpirySweep: Sendable, Equatable {
    /// The versions and delete markers removed, as they were.
    public var removed: [BlobVersion]
    /// Rows read through the deadline index: fewer than the limit means nothing more is due now.
    public var examined: Int
    /// Another node holds the sweep: this one did nothing.
    public var skipped: Bool
    /// The file versions of the removed data versions (recorded as garbage already).
    public var garbage: [String]

    public init(removed: [BlobVersion] = [], examined: Int = 0, skipped: Bool = false, garbage: [String] = []) {
        self.removed = removed
        self.examined = examined
        self.skipped = skipped
        self.garbage = garbage
    }
}

/// Where `VersionIndex.reviewVersions` goes on from: after this row of `blob_versions`.
public struct VersionRowCursor: Sendable, Equatable {
    public var key: [UInt8]
    public var seq: Int64

    public init(key: [UInt8], seq: Int64) {
        self.key = key
        self.seq = seq
    }
}

/// The event name of a version (or an expired delete marker) the sweep removes.
public enum NoncurrentExpirationEvent {
    public static let name = "LifecycleExpiration:Delete"
}

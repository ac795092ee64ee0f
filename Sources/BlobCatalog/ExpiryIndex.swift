import BlobCore

/// What one batch of the expiry sweep did (`BlobIndex.removeExpired`).
public struct ExpirySweep: Sendable, Equatable {
    /// The records deleted, as they were.
    public var removed: [BlobRecord]
    /// Rows read through the deadline index (deleted or stamped again): fewer than the limit
    /// means nothing more is due now.
    public var examined: Int
    /// Another node holds the sweep: this one did nothing.
    public var skipped: Bool
    /// The versions whose files became garbage: those of `removed`, but for the ones a versioned
    /// bucket kept as noncurrent versions (and with the `null` versions a suspended one dropped).
    public var garbage: [String]

    public init(removed: [BlobRecord] = [], examined: Int = 0, skipped: Bool = false, garbage: [String]? = nil) {
        self.removed = removed
        self.examined = examined
        self.skipped = skipped
        self.garbage = garbage ?? removed.map(\.version)
    }
}

/// How the expiry sweep removes a due record in a versioned bucket: as a DELETE does there, so
/// that the record stays as a noncurrent version (or, for the `null` version when suspended,
/// goes) and `marker`, a delete marker, becomes the key's latest version.
public struct ExpiryDeletion: Sendable, Equatable {
    /// Enabled or suspended.
    public var versioning: BucketVersioning
    public var marker: BlobRecord
    /// The NoncurrentDays of the key's rules (see `WriteCondition.noncurrentDays`).
    public var noncurrentDays: Int64?

    public init(versioning: BucketVersioning, marker: BlobRecord, noncurrentDays: Int64? = nil) {
        self.versioning = versioning
        self.marker = marker
        self.noncurrentDays = noncurrentDays
    }
}

/// A deadline to stamp on the row of `key` if it still holds `version`.
public struct ExpiryStamp: Sendable, Equatable {
    public var key: BlobKey
    public var version: String
    public var expiresAt: Int64?

    public init(key: BlobKey, version: String, expiresAt: Int64?) {
        self.key = key
        self.version = version
        self.expiresAt = expiresAt
    }
}

extension BlobRecord {
    /// The record while its stamped deadline (`expiresAt`) is ahead of `now`; nil once past it.
    /// A write's condition is decided against this: a blob past its deadline is absent to every
    /// reader already, so If-None-Match: * (and a create-only grant) may store over it.
    public func unexpired(now: Int64) -> BlobRecord? {
        guard let expiresAt, expiresAt <= now else { return self }
        return nil
    }
}

/// The event of a blob the expiry sweep removes: each backend writes it to the outbox in the
/// sweep's transaction, beside the delete (`removeExpired(now:limit:deadline:events:)`).
public enum LifecycleExpirationEvent {
    /// The eventName of such an event.
    public static let name = "s3:LifecycleExpiration:Delete"
}

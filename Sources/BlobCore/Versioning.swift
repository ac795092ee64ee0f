/// A bucket's versioning state (S3 PutBucketVersioning), kept as a bucket setting.
public enum BucketVersioning: String, Sendable, Equatable {
    /// Never enabled: a write replaces the key's record and its file goes, as always.
    case unversioned
    /// Every write and delete keeps the version it replaces; new versions get ids.
    case enabled
    /// Writes and deletes make the `null` version (replacing the key's `null` version only);
    /// versions with ids stay.
    case suspended

    /// True when a write or delete in this state keeps `replaced` (the key's current record)
    /// as a noncurrent version rather than making its file garbage.
    public func keeps(_ replaced: BlobRecord) -> Bool {
        switch self {
        case .unversioned: false
        case .enabled: true
        case .suspended: replaced.versioned
        }
    }
}

extension WriteCondition {
    /// True when the condition asks anything of the record (not only versioning).
    public var namesSomething: Bool {
        ifMatch != nil || ifNoneMatch != nil || ifUnmodifiedSince != nil || onlyCreate || ifModifiedAt != nil || ifSize != nil
    }
}

/// One version of a key: the current record (the `blobs` row), a noncurrent version, or a
/// delete marker.
public struct BlobVersion: Sendable, Equatable {
    /// The version's record. A delete marker's holds its key, id and time only.
    public var record: BlobRecord
    /// True for a delete marker.
    public var deleteMarker: Bool
    /// True for the newest version of its key (the current record, or a delete marker newer
    /// than every other version).
    public var latest: Bool

    public init(record: BlobRecord, deleteMarker: Bool = false, latest: Bool) {
        self.record = record
        self.deleteMarker = deleteMarker
        self.latest = latest
    }

    /// The id S3 and /v1 show: the record's version, or `null` for a version written while
    /// the bucket was not versioned (before, or while suspended).
    public var id: String { record.versionID }
}

extension BlobRecord {
    /// The id S3 and /v1 show for this version: `version`, or `null` for a version written
    /// while the bucket was not versioned.
    public var versionID: String { versioned ? version : "null" }

    /// A delete marker's record at `key`: an id, a time, no content.
    public static func deleteMarker(_ key: BlobKey, id: String, versioned: Bool, modified: Int64) -> BlobRecord {
        var record = BlobRecord(key: key, version: id, size: 0, sha256: [UInt8](repeating: 0, count: 32), contentType: "", modified: modified)
        record.versioned = versioned
        return record
    }
}

/// Where a listing of versions goes on from (S3's key-marker and version-id-marker): after
/// `key`'s versions up to and including `versionID`, or after every version of `key` when nil.
public struct VersionCursor: Sendable, Equatable {
    public var key: [UInt8]
    public var versionID: String?

    public init(key: [UInt8], versionID: String? = nil) {
        self.key = key
        self.versionID = versionID
    }
}

/// What removing a version, or deleting a key in a versioned bucket, did: the version removed
/// (nil when a delete found none), the delete marker it made (if any), and the versions whose
/// files are garbage now.
public struct VersionRemoval: Sendable, Equatable {
    public var removed: BlobVersion?
    public var marker: BlobVersion?
    public var garbage: [String]

    public init(removed: BlobVersion? = nil, marker: BlobVersion? = nil, garbage: [String] = []) {
        self.removed = removed
        self.marker = marker
        self.garbage = garbage
    }
}

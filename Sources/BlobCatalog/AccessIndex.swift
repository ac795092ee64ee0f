import BlobCore
import BucketSettings

/// A key made at run time (`/v1/admin/keys`) or by a bootstrap file, as the catalog keeps it:
/// its bearer token only as a SHA-256, its S3 secret as SigV4 needs it to check signatures.
public struct KeyRecord: Sendable, Equatable {
    /// Where a key came from.
    public enum Source: String, Sendable {
        case api, bootstrap
    }

    public var id: String
    public var name: String
    public var grants: Grants
    /// SHA-256 of the bearer token.
    public var tokenHash: [UInt8]
    public var accessKeyID: String
    public var secretAccessKey: String
    /// Seconds since the epoch.
    public var created: Int64
    /// When it stops working (seconds since the epoch), if ever.
    public var expires: Int64?
    public var source: Source

    public init(id: String, name: String, grants: Grants, tokenHash: [UInt8], accessKeyID: String, secretAccessKey: String,
                created: Int64, expires: Int64? = nil, source: Source = .api) {
        self.id = id
        self.name = name
        self.grants = grants
        self.tokenHash = tokenHash
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.created = created
        self.expires = expires
        self.source = source
    }

    /// True once its expiry has passed.
    public func isExpired(now: Int64) -> Bool { expires.map { $0 <= now } ?? false }
}

/// A share link: a key or every key under a prefix, to read or to upload, with an optional
/// expiry and download count. It works as long as the key that made it keeps the grant.
public struct ShareRecord: Sendable, Equatable {
    public enum Allow: String, Sendable {
        case read, upload
    }

    /// At least 128 random bits.
    public var id: String
    /// The principal that made it (`key:ID`, `token:…`, `s3:…`), whose grants it borrows.
    public var creator: String
    /// The bytes of the key, or of the prefix (`isPrefix`).
    public var target: [UInt8]
    public var isPrefix: Bool
    public var allow: Allow
    public var created: Int64
    public var expires: Int64?
    public var maxDownloads: Int64?
    public var downloads: Int64

    public init(id: String, creator: String, target: [UInt8], isPrefix: Bool, allow: Allow, created: Int64,
                expires: Int64? = nil, maxDownloads: Int64? = nil, downloads: Int64 = 0) {
        self.id = id
        self.creator = creator
        self.target = target
        self.isPrefix = isPrefix
        self.allow = allow
        self.created = created
        self.expires = expires
        self.maxDownloads = maxDownloads
        self.downloads = downloads
    }
}

/// What a bootstrap file asks for: buckets with their settings, keys with the secrets it gives,
/// and anonymous grants.
public struct BootstrapPlan: Sendable, Equatable {
    public var buckets: [Bucket]
    /// Bootstrap keys (`source == .bootstrap`); their ids follow from their names.
    public var keys: [KeyRecord]
    public var anonymous: Grants
    /// Settings of the file's buckets (CORS, lifecycle, notifications), each set to the value given.
    public var settings: [BucketAccessSetting]

    public init(buckets: [Bucket], keys: [KeyRecord], anonymous: Grants, settings: [BucketAccessSetting] = []) {
        self.buckets = buckets
        self.keys = keys
        self.anonymous = anonymous
        self.settings = settings
    }
}

/// Keys, share links and the grants of anonymous callers, shared by every node: each node keeps
/// the keys in memory and reads them again when `accessVersion` changes.
public protocol AccessIndex: Sendable {
    /// A number that every change of keys or anonymous grants makes larger.
    func accessVersion() throws(StoreError) -> Int64
    /// Every key.
    func keys() throws(StoreError) -> [KeyRecord]
    /// Adds a key; `.keyConflict` if its id, token or access key id is taken.
    func insertKey(_ key: KeyRecord) throws(StoreError)
    /// Replaces a key's grants; `.keyNotFound` if there is no such key.
    func replaceGrants(ofKey id: String, with grants: Grants) throws(StoreError) -> KeyRecord
    /// Removes a key and every share link it made; `.keyNotFound` if there is no such key.
    func revokeKey(_ id: String) throws(StoreError)
    /// The anonymous grants the catalog holds (a bootstrap file's).
    func anonymousGrants() throws(StoreError) -> Grants
    /// Applies a bootstrap plan in one transaction: creates missing buckets, creates or updates
    /// its keys, sets the anonymous grants and the settings it names (others stay). Applying it
    /// twice changes nothing.
    func applyBootstrap(_ plan: BootstrapPlan) throws(StoreError)

    /// Every bucket's access settings (canned ACLs and policies), by bucket and name.
    func bucketAccess() throws(StoreError) -> [BucketAccessSetting]
    /// The access settings of one bucket, by name.
    func bucketAccess(of bucket: String) throws(StoreError) -> [BucketAccessSetting]
    /// Sets (or, with `value` nil, removes) one access setting of a bucket and bumps the access
    /// version, in one transaction; `.bucketNotFound` if the bucket does not exist. Removing the
    /// bucket removes its settings (and bumps the version).
    func setBucketAccess(_ bucket: String, _ name: BucketAccessSetting.Name, to value: String?) throws(StoreError)

    /// Adds a share link.
    func insertShare(_ share: ShareRecord) throws(StoreError)
    /// A share link by id.
    func share(_ id: String) throws(StoreError) -> ShareRecord?
    /// The share links a principal made.
    func shares(createdBy creator: String) throws(StoreError) -> [ShareRecord]
    /// Removes a share link; `.shareNotFound` if there is none.
    func removeShare(_ id: String) throws(StoreError)
    /// Counts one download of a share link, atomically: false (and nothing counted) when its
    /// downloads are used up or it is gone.
    func countDownload(_ id: String) throws(StoreError) -> Bool
}

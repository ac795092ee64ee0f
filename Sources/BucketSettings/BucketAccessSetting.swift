import BlobCore

/// One setting of a bucket: the canned ACL, the policy (JSON text, as given), the canned ACL of
/// one object of it, or a configuration kept as its /v1 JSON (CORS, lifecycle, notifications).
/// The catalog keeps the text; what they mean is computed where they are read (`KeyDirectory`),
/// on every node after each change of the access version.
public struct BucketAccessSetting: Sendable, Hashable {
    /// Which setting of the bucket.
    public enum Name: Sendable, Hashable {
        /// The bucket's canned ACL.
        case acl
        /// The bucket policy.
        case policy
        /// The canned ACL of the object with this key (inside the bucket, without `BUCKET/`).
        case objectACL(String)
        /// CORS rules, as the JSON of `/v1/admin/buckets/B/cors`.
        case cors
        /// Lifecycle rules, as the JSON of `/v1/admin/buckets/B/lifecycle`.
        case lifecycle
        /// Event subscriptions, as the JSON of `/v1/admin/buckets/B/notifications`.
        case notifications
        /// Versioning: `Enabled` or `Suspended` (S3 PutBucketVersioning).
        case versioning
        /// Object Lock: `ObjectLockConfiguration.stored`.
        case objectLock

        /// How the catalog names it: `acl`, `policy`, `object-acl/KEY`, `cors`, `lifecycle`, `notifications`.
        public var stored: String {
            switch self {
            case .acl: "acl"
            case .policy: "policy"
            case .objectACL(let key): "object-acl/" + key
            case .cors: "cors"
            case .lifecycle: "lifecycle"
            case .notifications: "notifications"
            case .versioning: "versioning"
            case .objectLock: "object-lock"
            }
        }

        /// The name a catalog row holds; nil if unknown.
        public init?(stored: String) {
            switch stored {
            case "acl": self = .acl
            case "policy": self = .policy
            case "cors": self = .cors
            case "lifecycle": self = .lifecycle
            case "notifications": self = .notifications
            case "versioning": self = .versioning
            case "object-lock": self = .objectLock
            default:
                guard stored.hasPrefix("object-acl/") else { return nil }
                self = .objectACL(String(stored.dropFirst("object-acl/".count)))
            }
        }
    }

    public var bucket: String
    public var name: Name
    public var value: String

    public init(bucket: String, name: Name, value: String) {
        self.bucket = bucket
        self.name = name
        self.value = value
    }
}

extension BucketAccessSetting {
    /// The settings of a bucket with Object Lock (S3 CreateBucket with
    /// `x-amz-bucket-object-lock-enabled` and PUT /v1/buckets: no default retention; a bootstrap
    /// file: the one it names): versioning on for good, and the lock.
    public static func objectLock(_ bucket: String, _ configuration: ObjectLockConfiguration = ObjectLockConfiguration())
        -> [BucketAccessSetting] {
        [BucketAccessSetting(bucket: bucket, name: .versioning, value: "Enabled"),
         BucketAccessSetting(bucket: bucket, name: .objectLock, value: configuration.stored)]
    }
}

import BlobCatalog
import BlobCore
import BucketSettings
import Logging
import Synchronization

/// The buckets' settings (versioning, Object Lock, CORS, lifecycle, notifications, ACLs and
/// policies): the one way they are written, and the table every request reads them from.
///
/// Every change is one catalog transaction that also moves the access version; the node that
/// made it reads the table again at once, and every other node when its poll sees the version
/// move (`reloadIfChanged`, within about a second). A change of a bucket's lifecycle rules
/// restamps its blobs' deadlines. Owned by the store (`BlobStore.settings`).
public final class BucketSettingsService: Sendable {
    private let access: any AccessIndex
    private let buckets: any BucketIndex
    private let table = Mutex(BucketSettingsTable())
    /// Whether some bucket has CORS rules: read on every answer, without the table's lock.
    private let anyCORS = Atomic<Bool>(false)
    /// Whether some bucket has event subscriptions: read on every write, without the lock.
    private let anySubscriptions = Atomic<Bool>(false)
    /// Stamps a bucket's blobs with their deadlines after its lifecycle rules changed.
    private let restamp: @Sendable (String) -> Void
    private let logger: Logger

    init(access: any AccessIndex, buckets: any BucketIndex, logger: Logger, restamp: @escaping @Sendable (String) -> Void) {
        self.access = access
        self.buckets = buckets
        self.logger = logger
        self.restamp = restamp
    }

    // MARK: Writing

    /// Sets (or, with `value` nil, removes) one setting of `bucket`; `.bucketNotFound` if the
    /// bucket does not exist. In force on this node when it returns.
    public func set(_ bucket: String, _ name: BucketAccessSetting.Name, to value: String?) throws(StoreError) {
        try access.setBucketAccess(bucket, name, to: value)
        try reload()
        if name == .lifecycle { restamp(bucket) }
    }

    /// Creates `bucket` with its first settings (an Object Lock bucket's, say) in one
    /// transaction; false (and nothing changed) if it exists.
    public func create(_ bucket: Bucket, with settings: [BucketAccessSetting] = []) throws(StoreError) -> Bool {
        guard try buckets.createBucket(bucket, settings: settings) else { return false }
        if !settings.isEmpty { try reload() }
        return true
    }

    /// Removes the empty bucket `name` with its settings; see `BucketIndex.removeBucket`.
    public func remove(_ name: String) throws(StoreError) {
        try buckets.removeBucket(name)
        try reload()
    }

    /// Applies a bootstrap plan (one transaction, see `AccessIndex.applyBootstrap`); the buckets
    /// whose lifecycle rules it changed are restamped.
    public func apply(_ plan: BootstrapPlan) throws(StoreError) {
        let before = try access.bucketAccess().filter { $0.name == .lifecycle }
        let changed = plan.settings.filter { setting in
            setting.name == .lifecycle && !before.contains { $0.bucket == setting.bucket && $0.value == setting.value }
        }
        try access.applyBootstrap(plan)
        try reload()
        for setting in changed { restamp(setting.bucket) }
    }

    /// The stored text of one setting of `bucket` (nil if it has none), read from the catalog.
    public func stored(_ bucket: String, _ name: BucketAccessSetting.Name) throws(StoreError) -> String? {
        try access.bucketAccess(of: bucket).first { $0.name == name }?.value
    }

    // MARK: Reading the table

    /// Reads every bucket's settings again if the catalog's access version moved.
    public func reloadIfChanged() throws(StoreError) {
        try reloadIfChanged(version: access.accessVersion())
    }

    /// Reads every bucket's settings again if `version`, the access version just read, is not
    /// the one the table was read at.
    public func reloadIfChanged(version: Int64) throws(StoreError) {
        if version != table.withLock({ $0.version }) { try reload() }
    }

    /// Reads every bucket's settings.
    public func reload() throws(StoreError) {
        let version = try access.accessVersion()
        let fresh = BucketSettingsTable(version: version, stored: try access.bucketAccess())
        let replaced = table.withLock { current in
            guard fresh.version >= current.version else { return false }
            current = fresh
            anyCORS.store(!fresh.cors.isEmpty, ordering: .relaxed)
            anySubscriptions.store(!fresh.subscriptions.isEmpty, ordering: .relaxed)
            return true
        }
        guard replaced else { return }
        for unreadable in fresh.unreadable {
            logger.warning("A setting of a bucket no longer reads", metadata: ["setting": "\(unreadable.setting)", "effect": "\(unreadable.effect)"])
        }
    }

    /// Every bucket's settings, as last read.
    public var current: BucketSettingsTable { table.withLock { $0 } }

    /// The versioning of `bucket`.
    public func versioning(of bucket: Substring) -> BucketVersioning {
        table.withLock { $0.versioning(of: bucket) }
    }

    /// The Object Lock configuration of `bucket`; nil without Object Lock.
    public func objectLock(of bucket: Substring) -> ObjectLockConfiguration? {
        table.withLock { $0.objectLock(of: bucket) }
    }

    /// Every bucket's lifecycle rules.
    public var lifecycle: LifecycleRules { table.withLock { $0.lifecycle } }

    /// Whether some bucket has CORS rules.
    public var hasCORSRules: Bool { anyCORS.load(ordering: .relaxed) }

    /// The CORS rules of `bucket`, nil if it has none.
    public func cors(of bucket: String) -> CORSConfiguration? {
        hasCORSRules ? table.withLock { $0.cors[bucket] } : nil
    }

    /// Whether some bucket has event subscriptions.
    public var hasSubscriptions: Bool { anySubscriptions.load(ordering: .relaxed) }

    /// The event subscriptions of `bucket`, nil if it has none.
    public func subscriptions(of bucket: String) -> [NotificationConfiguration.Subscription]? {
        hasSubscriptions ? table.withLock { $0.subscriptions[bucket] } : nil
    }

    /// What the buckets' canned ACLs and policies give to every caller.
    public var anonymousGrants: Grants { table.withLock { $0.anonymous } }

    /// What they give besides to every caller with a credential (authenticated-read ACLs).
    public var authenticatedGrants: Grants { table.withLock { $0.authenticated } }
}

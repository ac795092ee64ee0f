import BlobCore

/// Every bucket's settings, read from the catalog's stored text (`BucketAccessSetting`) once per
/// access version: what writes, reads, access checks, CORS answers and events ask on every
/// request, with no catalog read. A setting that no longer reads is left out (it then does
/// nothing) and listed in `unreadable`, except Object Lock, which a bucket never loses.
public struct BucketSettingsTable: Sendable {
    /// A stored setting that no longer reads, and what that means.
    public struct Unreadable: Sendable, Equatable {
        /// `BUCKET NAME`, e.g. `photos cors`.
        public var setting: String
        /// What it does now, e.g. `allows nothing`.
        public var effect: String
    }

    /// The catalog's access version these settings were read at.
    public var version: Int64
    /// The versioning of the buckets that ever had it on (the others are unversioned).
    public var versioning: [String: BucketVersioning] = [:]
    /// The Object Lock configuration of the buckets that have one.
    public var objectLock: [String: ObjectLockConfiguration] = [:]
    /// Each bucket's CORS rules.
    public var cors: [String: CORSConfiguration] = [:]
    /// Every bucket's lifecycle rules.
    public var lifecycle = LifecycleRules()
    /// Each bucket's event subscriptions.
    public var subscriptions: [String: [NotificationConfiguration.Subscription]] = [:]
    /// What the buckets' canned ACLs and policies give to every caller.
    public var anonymous = Grants.none
    /// What they give besides to every caller with a credential (authenticated-read ACLs).
    public var authenticated = Grants.none
    /// Settings that no longer read, for the log.
    public var unreadable: [Unreadable] = []

    /// No settings at all (every bucket unversioned, nothing granted).
    public init() {
        version = -1
    }

    /// The settings `stored` holds, read at access version `version`.
    public init(version: Int64, stored: [BucketAccessSetting]) {
        self.version = version
        for setting in stored {
            switch setting.name {
            case .versioning: versioning[setting.bucket] = setting.value == "Enabled" ? .enabled : .suspended
            // One that no longer reads still locks: the bucket keeps Object Lock, without a default.
            case .objectLock: objectLock[setting.bucket] = ObjectLockConfiguration(stored: setting.value) ?? ObjectLockConfiguration()
            case .cors: readCORS(setting)
            case .notifications: readSubscriptions(setting)
            case .lifecycle, .acl, .objectACL, .policy: continue
            }
        }
        let lifecycle = LifecycleSettings.rules(of: stored)
        self.lifecycle = lifecycle.rules
        unreadable += lifecycle.unreadable.map { Unreadable(setting: $0, effect: "expires nothing") }
        let grants = SettingGrants(stored)
        anonymous = Grants(grants.anonymous)
        authenticated = Grants(grants.authenticated)
        unreadable += grants.unreadable.map { Unreadable(setting: $0, effect: "grants nothing") }
    }

    private mutating func readCORS(_ setting: BucketAccessSetting) {
        do throws(CORSConfiguration.Invalid) {
            cors[setting.bucket] = try CORSConfiguration(jsonText: Array(setting.value.utf8))
        } catch {
            unreadable.append(Unreadable(setting: setting.bucket + " cors", effect: "allows nothing"))
        }
    }

    private mutating func readSubscriptions(_ setting: BucketAccessSetting) {
        do throws(NotificationConfiguration.Invalid) {
            subscriptions[setting.bucket] = try NotificationConfiguration(json: Array(setting.value.utf8)).subscriptions
        } catch {
            unreadable.append(Unreadable(setting: setting.bucket + " notifications", effect: "sends no events"))
        }
    }

    /// The versioning of `bucket`.
    public func versioning(of bucket: Substring) -> BucketVersioning {
        versioning.isEmpty ? .unversioned : versioning[String(bucket)] ?? .unversioned
    }

    /// The Object Lock configuration of `bucket`; nil without Object Lock.
    public func objectLock(of bucket: Substring) -> ObjectLockConfiguration? {
        objectLock.isEmpty ? nil : objectLock[String(bucket)]
    }
}

import BlobStore
import Dispatch
import Foundation
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The keys of the catalog (made at run time or by a bootstrap file), its anonymous grants and
/// those of the buckets' ACLs and policies,
/// held in memory for every request, by token digest and by access key id. The node that
/// changes a key reloads at once; every node polls the catalog's access version once a second,
/// so a key revoked on one node stops working on every other within about a second.
public final class KeyDirectory: BucketVersioningLookup {
    private struct Snapshot: Sendable {
        var version: Int64 = -1
        var byToken: [[UInt8]: KeyRecord] = [:]
        var byAccessKey: [String: KeyRecord] = [:]
        var anonymous: Grants = .none
        var authenticated: Grants = .none
        var keys: [KeyRecord] = []
        /// The versioning of the buckets that ever had it on (the others are unversioned).
        var versioning: [String: BucketVersioning] = [:]
        /// The Object Lock configuration of the buckets that have one.
        var objectLock: [String: ObjectLockConfiguration] = [:]
        /// Each bucket's CORS rules, parsed once per access version.
        var cors: [String: CORSConfiguration] = [:]
        /// Every bucket's lifecycle rules.
        var lifecycle = LifecycleRules()
    }

    private let index: Mutex<(any AccessIndex)?> = Mutex(nil)
    private let snapshot = Mutex(Snapshot())
    private let stopped = Mutex(false)
    /// Whether some bucket has CORS rules: read on every answer, without the snapshot's lock.
    private let anyCORS = Atomic<Bool>(false)
    /// Told the lifecycle rules after every reload (the store, which decides expiry with them).
    private let lifecycleSink = Mutex<(@Sendable (LifecycleRules) -> Void)?>(nil)
    private let logger = Logger(label: "blobd.keys")
    /// The buckets' event subscriptions, read with the keys on every change of the access version.
    public let events = EventRouter()

    public init() {}

    /// Serves the keys of `index` from now on, reading them at once (throws if it cannot),
    /// then polling every `interval` seconds until `stop`.
    public func attach(_ index: any AccessIndex, polling interval: Double = 1) throws(StoreError) {
        self.index.withLock { $0 = index }
        try reload()
        let thread = Thread { [self] in
            while !stopped.withLock({ $0 }) {
                usleep(UInt32(interval * 1_000_000))
                do throws(StoreError) { try reloadIfChanged() } catch {
                    logger.warning("Cannot read the keys of the index; the ones read before stay in force", metadata: ["error": "\(error)"])
                }
            }
        }
        thread.start()
    }

    /// Stops polling.
    public func stop() { stopped.withLock { $0 = true } }

    /// Reads the keys again if the catalog's access version moved.
    public func reloadIfChanged() throws(StoreError) {
        guard let index = index.withLock({ $0 }) else { return }
        if try index.accessVersion() != snapshot.withLock({ $0.version }) { try reload() }
    }

    /// Reads every key and the anonymous grants.
    public func reload() throws(StoreError) {
        guard let index = index.withLock({ $0 }) else { return }
        let version = try index.accessVersion()
        var fresh = Snapshot(version: version)
        fresh.keys = try index.keys()
        for key in fresh.keys {
            fresh.byToken[key.tokenHash] = key
            fresh.byAccessKey[key.accessKeyID] = key
        }
        // The effective grants of every caller, computed here once for every node and dialect:
        // the catalog's anonymous grants and those of the buckets' ACLs and policies.
        let stored = try index.bucketAccess()
        for setting in stored where setting.name == .versioning {
            fresh.versioning[setting.bucket] = setting.value == "Enabled" ? .enabled : .suspended
        }
        for setting in stored where setting.name == .objectLock {
            // One that no longer reads still locks: the bucket keeps Object Lock, without a default.
            fresh.objectLock[setting.bucket] = ObjectLockConfiguration(stored: setting.value) ?? ObjectLockConfiguration()
        }
        for bucket in events.update(stored) {
            logger.warning("The event subscriptions of a bucket no longer read; it sends no events", metadata: ["bucket": "\(bucket)"])
        }
        let settings = SettingGrants(stored)
        for unreadable in settings.unreadable {
            logger.warning("An access setting of the index no longer reads; it grants nothing", metadata: ["setting": "\(unreadable)"])
        }
        fresh.anonymous = try index.anonymousGrants().union(Grants(settings.anonymous))
        fresh.authenticated = Grants(settings.authenticated)
        fresh.cors = corsRules(stored)
        let lifecycle = LifecycleSettings.rules(of: stored)
        for unreadable in lifecycle.unreadable {
            logger.warning("A lifecycle setting of the index no longer reads; it expires nothing", metadata: ["setting": "\(unreadable)"])
        }
        fresh.lifecycle = lifecycle.rules
        let sink = lifecycleSink.withLock { $0 }
        snapshot.withLock { current in
            guard fresh.version >= current.version else { return }
            current = fresh
            anyCORS.store(!fresh.cors.isEmpty, ordering: .relaxed)
            // Under the snapshot's lock, so that the store gets the rules in the order they were read.
            sink?(fresh.lifecycle)
        }
    }

    /// Every bucket's lifecycle rules, as last read.
    public var lifecycle: LifecycleRules { snapshot.withLock { $0.lifecycle } }

    /// Hands the lifecycle rules to `sink` now and after every reload.
    public func onLifecycle(_ sink: @escaping @Sendable (LifecycleRules) -> Void) {
        lifecycleSink.withLock { $0 = sink }
        sink(lifecycle)
    }

    /// The CORS rules of each bucket that has some; a setting that no longer reads is left out, and logged.
    private func corsRules(_ settings: [BucketAccessSetting]) -> [String: CORSConfiguration] {
        var rules: [String: CORSConfiguration] = [:]
        for setting in settings where setting.name == .cors {
            do throws(CORSConfiguration.Invalid) {
                rules[setting.bucket] = try CORSConfiguration(jsonText: Array(setting.value.utf8))
            } catch {
                logger.warning("A bucket's CORS rules no longer read; they allow nothing", metadata: ["bucket": "\(setting.bucket)"])
            }
        }
        return rules
    }

    /// The versioning of `bucket`, as of the last reload (on every node within a second of a
    /// change; at once on the node that made it).
    public func versioning(of bucket: Substring) -> BucketVersioning {
        snapshot.withLock { $0.versioning.isEmpty ? .unversioned : $0.versioning[String(bucket)] ?? .unversioned }
    }

    /// The Object Lock configuration of `bucket`, as of the last reload; nil without Object Lock.
    public func objectLock(of bucket: Substring) -> ObjectLockConfiguration? {
        snapshot.withLock { $0.objectLock.isEmpty ? nil : $0.objectLock[String(bucket)] }
    }

    /// The catalog, when attached.
    public var catalog: (any AccessIndex)? { index.withLock { $0 } }

    /// The key whose token has this SHA-256, unless it expired.
    public func key(tokenHash: [UInt8], now: Int64 = Int64(time(nil))) -> KeyRecord? {
        snapshot.withLock { $0.byToken[tokenHash] }.flatMap { $0.isExpired(now: now) ? nil : $0 }
    }

    /// The key with this S3 access key id, unless it expired.
    public func key(accessKeyID: String, now: Int64 = Int64(time(nil))) -> KeyRecord? {
        snapshot.withLock { $0.byAccessKey[accessKeyID] }.flatMap { $0.isExpired(now: now) ? nil : $0 }
    }

    /// True when the catalog has a key whose token has this SHA-256 and it expired (a refusal
    /// of it is counted as `expired`, not as an unknown credential).
    public func hasExpired(tokenHash: [UInt8], now: Int64 = Int64(time(nil))) -> Bool {
        snapshot.withLock { $0.byToken[tokenHash] }?.isExpired(now: now) ?? false
    }

    /// True when the catalog has a key with this access key id and it expired.
    public func hasExpired(accessKeyID: String, now: Int64 = Int64(time(nil))) -> Bool {
        snapshot.withLock { $0.byAccessKey[accessKeyID] }?.isExpired(now: now) ?? false
    }

    /// Whether some bucket has CORS rules.
    public var hasCORSRules: Bool { anyCORS.load(ordering: .relaxed) }

    /// The CORS rules of `bucket`, nil if it has none.
    public func corsRules(of bucket: String) -> CORSConfiguration? {
        snapshot.withLock { $0.cors[bucket] }
    }

    /// Every key, as last read.
    public var keys: [KeyRecord] { snapshot.withLock { $0.keys } }

    /// The catalog's anonymous grants: a bootstrap file's, and those of public ACLs and bucket policies.
    public var anonymous: Grants { snapshot.withLock { $0.anonymous } }

    /// What every caller with a credential holds besides (authenticated-read ACLs).
    public var authenticated: Grants { snapshot.withLock { $0.authenticated } }
}

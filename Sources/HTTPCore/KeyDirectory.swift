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
public final class KeyDirectory: Sendable {
    private struct Snapshot: Sendable {
        var version: Int64 = -1
        var byToken: [[UInt8]: KeyRecord] = [:]
        var byAccessKey: [String: KeyRecord] = [:]
        var anonymous: Grants = .none
        var authenticated: Grants = .none
        var keys: [KeyRecord] = []
    }

    private let index: Mutex<(any AccessIndex)?> = Mutex(nil)
    private let snapshot = Mutex(Snapshot())
    private let stopped = Mutex(false)
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
        for bucket in events.update(stored) {
            logger.warning("The event subscriptions of a bucket no longer read; it sends no events", metadata: ["bucket": "\(bucket)"])
        }
        let settings = SettingGrants(stored)
        for unreadable in settings.unreadable {
            logger.warning("An access setting of the index no longer reads; it grants nothing", metadata: ["setting": "\(unreadable)"])
        }
        fresh.anonymous = try index.anonymousGrants().union(Grants(settings.anonymous))
        fresh.authenticated = Grants(settings.authenticated)
        snapshot.withLock { current in if fresh.version >= current.version { current = fresh } }
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

    /// Every key, as last read.
    public var keys: [KeyRecord] { snapshot.withLock { $0.keys } }

    /// The catalog's anonymous grants: a bootstrap file's, and those of public ACLs and bucket policies.
    public var anonymous: Grants { snapshot.withLock { $0.anonymous } }

    /// What every caller with a credential holds besides (authenticated-read ACLs).
    public var authenticated: Grants { snapshot.withLock { $0.authenticated } }
}

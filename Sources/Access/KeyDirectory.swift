import BlobStore
import Foundation
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The keys of the catalog (made at run time or by a bootstrap file) and its anonymous grants,
/// held in memory for every request, by token digest and by access key id, with what the
/// buckets' ACLs and policies grant (from the store's `BucketSettingsService`). The node that
/// changes a key reloads at once; every node polls the catalog's access version once a second
/// and reads the keys and the bucket settings again when it moved, so a key revoked on one
/// node stops working on every other within about a second.
public final class KeyDirectory: Sendable {
    private struct Snapshot: Sendable {
        var version: Int64 = -1
        var byToken: [[UInt8]: KeyRecord] = [:]
        var byAccessKey: [String: KeyRecord] = [:]
        var anonymous: Grants = .none
        var keys: [KeyRecord] = []
    }

    private struct Sources: Sendable {
        var index: any AccessIndex
        var settings: BucketSettingsService
    }

    private let sources: Mutex<Sources?> = Mutex(nil)
    /// Where key expiry reads the time of day.
    public let clock: WallClock
    private let snapshot = Mutex(Snapshot())
    private let logger = Logger(label: "blobd.keys")

    /// A directory with no catalog yet, whose keys expire by `clock`.
    public init(clock: WallClock = .system) {
        self.clock = clock
    }

    /// Serves the keys of `index` and the grants of the buckets' `settings` from now on, reading
    /// the keys at once (throws if it cannot). `poll` (blobd's key poll, a service) then keeps
    /// them current.
    public func attach(_ index: any AccessIndex, settings: BucketSettingsService) throws(StoreError) {
        sources.withLock { $0 = Sources(index: index, settings: settings) }
        try reload()
    }

    /// One poll: reads the keys and the settings again if the access version moved; a failure
    /// is logged, and what was read before stays in force.
    public func poll() {
        do throws(StoreError) { try reloadIfChanged() } catch {
            logger.warning("Cannot read the keys of the index; the ones read before stay in force", metadata: ["error": "\(error)"])
        }
    }

    /// Reads the keys and the bucket settings again if the catalog's access version moved.
    public func reloadIfChanged() throws(StoreError) {
        guard let sources = sources.withLock({ $0 }) else { return }
        // One read of the access version per poll, for the keys and the settings alike.
        let version = try sources.index.accessVersion()
        try sources.settings.reloadIfChanged(version: version)
        if version != snapshot.withLock({ $0.version }) { try reloadKeys(sources.index) }
    }

    /// Reads every key, the anonymous grants and the bucket settings.
    public func reload() throws(StoreError) {
        guard let sources = sources.withLock({ $0 }) else { return }
        try sources.settings.reload()
        try reloadKeys(sources.index)
    }

    private func reloadKeys(_ index: any AccessIndex) throws(StoreError) {
        var fresh = Snapshot(version: try index.accessVersion())
        fresh.keys = try index.keys()
        for key in fresh.keys {
            fresh.byToken[key.tokenHash] = key
            fresh.byAccessKey[key.accessKeyID] = key
        }
        fresh.anonymous = try index.anonymousGrants()
        snapshot.withLock { current in
            if fresh.version >= current.version { current = fresh }
        }
    }

    /// The catalog, when attached.
    public var catalog: (any AccessIndex)? { sources.withLock { $0?.index } }

    /// The key whose token has this SHA-256, unless it expired.
    public func key(tokenHash: [UInt8]) -> KeyRecord? {
        snapshot.withLock { $0.byToken[tokenHash] }.flatMap { $0.isExpired(now: clock.seconds) ? nil : $0 }
    }

    /// The key with this S3 access key id, unless it expired.
    public func key(accessKeyID: String) -> KeyRecord? {
        snapshot.withLock { $0.byAccessKey[accessKeyID] }.flatMap { $0.isExpired(now: clock.seconds) ? nil : $0 }
    }

    /// True when the catalog has a key whose token has this SHA-256 and it expired (a refusal
    /// of it is counted as `expired`, not as an unknown credential).
    public func hasExpired(tokenHash: [UInt8]) -> Bool {
        snapshot.withLock { $0.byToken[tokenHash] }?.isExpired(now: clock.seconds) ?? false
    }

    /// True when the catalog has a key with this access key id and it expired.
    public func hasExpired(accessKeyID: String) -> Bool {
        snapshot.withLock { $0.byAccessKey[accessKeyID] }?.isExpired(now: clock.seconds) ?? false
    }

    /// Every key, as last read.
    public var keys: [KeyRecord] { snapshot.withLock { $0.keys } }

    /// The catalog's anonymous grants: a bootstrap file's, and those of public ACLs and bucket policies.
    public var anonymous: Grants {
        let stored = snapshot.withLock { $0.anonymous }
        guard let settings = sources.withLock({ $0?.settings }) else { return stored }
        return stored.union(settings.anonymousGrants)
    }

    /// What every caller with a credential holds besides (authenticated-read ACLs).
    public var authenticated: Grants {
        sources.withLock { $0?.settings }?.authenticatedGrants ?? .none
    }
}

import BlobStore
import MicroHTTPD
import Observability
import Synchronization

/// Which changes the buckets' subscriptions want (as the store's `BucketSettingsService` last
/// read them: every node follows a change within about a second), and the targets this node
/// may send to. The HTTP layer asks it for an `EventDraft` before a change
/// commits; no catalog read per request.
public final class EventRouter: Sendable {
    /// The configured targets and who this node is.
    public struct Settings: Sendable {
        public var targets: Set<String>
        public var node: String
        public var region: String

        public init(targets: Set<String>, node: String, region: String = "us-east-1") {
            self.targets = targets
            self.node = node
            self.region = region
        }
    }

    private let settings = Mutex(Settings(targets: [], node: "blobd"))
    private let buckets: BucketSettingsService

    /// Drafts events for the subscriptions of `buckets`.
    public init(_ buckets: BucketSettingsService) {
        self.buckets = buckets
    }

    /// True when no bucket has a subscription (nothing to look up for an event).
    public var isIdle: Bool { !buckets.hasSubscriptions }

    /// Sets the targets and node name (at start).
    public func configure(_ settings: Settings) {
        self.settings.withLock { $0 = settings }
    }

    /// The configured target names.
    public var targets: Set<String> { settings.withLock { $0.targets } }

    /// The draft of event `name` (without `s3:`) for a change of `key` a request asks for, or
    /// nil when no subscription (to a configured target) wants it.
    public func draft(_ name: String, key: BlobKey, head: HTTPRequestHead, dialect: String, requestID: String? = nil) -> EventDraft? {
        draft(name, key: key, principal: head.annotation.principal?.name ?? "anonymous", sourceIP: head.peer?.host ?? "",
              dialect: dialect, requestID: requestID)
    }

    /// The draft of event `name` for a change blobd makes itself (a lifecycle sweep:
    /// `LifecycleExpiration:Delete`, principal `blobd`), or nil when no subscription wants it.
    public func draft(_ name: String, key: BlobKey, principal: String, sourceIP: String = "", dialect: String,
                      requestID: String? = nil) -> EventDraft? {
        guard let bucket = EventDraft.bucket(of: key) else { return nil }
        guard let subscriptions = buckets.subscriptions(of: String(bucket)), !subscriptions.isEmpty else { return nil }
        let settings = self.settings.withLock { $0 }
        let objectKey = String(key.rawValue.utf8.dropFirst(bucket.utf8.count + 1)) ?? ""
        let targets = subscriptions.filter { settings.targets.contains($0.target) && $0.wants(name, objectKey: objectKey) }
            .map { EventTarget(target: $0.target, configurationID: $0.id) }
        guard !targets.isEmpty else { return nil }
        return EventDraft(name: name, targets: targets, principal: principal, requestID: requestID ?? RequestID.next(),
                          sourceIP: sourceIP, dialect: dialect, node: settings.node, region: settings.region)
    }
}

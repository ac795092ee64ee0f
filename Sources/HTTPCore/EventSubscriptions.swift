import BlobStore
import Foundation
import MicroHTTPD
import Synchronization

/// A bucket's event subscriptions, as `/v1/admin/buckets/B/notifications` takes them:
/// `{"subscriptions": [{"id", "target", "events": [...], "prefix", "suffix"}]}`. S3's
/// NotificationConfiguration XML is converted to it (`BlobS3`), and the catalog keeps its
/// canonical JSON (`json`).
public struct NotificationConfiguration: Sendable, Equatable {
    public struct Subscription: Sendable, Equatable {
        public var id: String
        public var target: String
        /// S3 event names (`s3:ObjectCreated:*`, `s3:ObjectRemoved:Delete`, ...).
        public var events: [String]
        public var prefix: String
        public var suffix: String

        public init(id: String, target: String, events: [String], prefix: String = "", suffix: String = "") {
            self.id = id
            self.target = target
            self.events = events
            self.prefix = prefix
            self.suffix = suffix
        }

        /// True when this subscription wants event `name` (without `s3:`) of `objectKey`,
        /// compared byte for byte as S3 compares keys (not as Unicode text); a pattern ending in
        /// `:*` takes every name it starts.
        public func wants(_ name: String, objectKey: String) -> Bool {
            let key = objectKey.utf8
            guard key.starts(with: prefix.utf8), key.count >= suffix.utf8.count,
                  key.suffix(suffix.utf8.count).elementsEqual(suffix.utf8) else { return false }
            return events.contains { pattern in
                let pattern = pattern.utf8
                guard pattern.starts(with: "s3:".utf8) else { return false }
                let wanted = pattern.dropFirst(3)
                if wanted.elementsEqual(name.utf8) { return true }
                return wanted.count >= 2 && wanted.suffix(2).elementsEqual(":*".utf8) && name.utf8.starts(with: wanted.dropLast())
            }
        }
    }

    /// Why a configuration was refused.
    public enum Invalid: Error, Equatable {
        /// Not in the expected shape; the text says how.
        case malformed(String)
        /// Names a target that is not configured (`--notify-webhook`).
        case unknownTarget(String)
    }

    /// The event names blobd emits or accepts, as S3 names them.
    public static let eventNames: Set<String> = [
        "s3:ObjectCreated:*", "s3:ObjectCreated:Put", "s3:ObjectCreated:Post", "s3:ObjectCreated:Copy",
        "s3:ObjectCreated:CompleteMultipartUpload", "s3:ObjectRemoved:*", "s3:ObjectRemoved:Delete",
        "s3:ObjectRemoved:DeleteMarkerCreated", "s3:LifecycleExpiration:*", "s3:LifecycleExpiration:Delete",
        "s3:LifecycleExpiration:DeleteMarkerCreated",
    ]

    public static let maximumSubscriptions = 100

    public var subscriptions: [Subscription]

    public init(subscriptions: [Subscription]) {
        self.subscriptions = subscriptions
    }

    /// Checks a configuration: ids unique (one is made when missing), events known, targets
    /// among `targets` (unless nil: any).
    public func validated(targets: Set<String>?) throws(Invalid) -> NotificationConfiguration {
        guard subscriptions.count <= Self.maximumSubscriptions else {
            throw .malformed("at most \(Self.maximumSubscriptions) subscriptions")
        }
        var seen = Set<String>()
        var checked: [Subscription] = []
        for (index, var subscription) in subscriptions.enumerated() {
            if subscription.id.isEmpty { subscription.id = "subscription-\(index + 1)" }
            guard subscription.id.utf8.count <= 255, seen.insert(subscription.id).inserted else {
                throw .malformed("subscription ids must be unique and at most 255 bytes ('\(subscription.id)')")
            }
            guard !subscription.events.isEmpty else { throw .malformed("subscription '\(subscription.id)' names no events") }
            if let unknown = subscription.events.first(where: { !Self.eventNames.contains($0) }) {
                throw .malformed("unknown event '\(unknown)' (blobd knows \(Self.eventNames.sorted().joined(separator: ", ")))")
            }
            guard subscription.prefix.utf8.count <= 1024, subscription.suffix.utf8.count <= 1024 else {
                throw .malformed("a prefix or suffix is at most 1024 bytes")
            }
            if let targets, !targets.contains(subscription.target) { throw .unknownTarget(subscription.target) }
            checked.append(subscription)
        }
        return NotificationConfiguration(subscriptions: checked)
    }

    /// Reads the /v1 JSON.
    public init(json: [UInt8]) throws(Invalid) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json)) else { throw .malformed("the body is not JSON") }
        try self.init(jsonObject: object)
    }

    /// Reads the /v1 JSON, parsed.
    public init(jsonObject: Any) throws(Invalid) {
        guard let root = jsonObject as? [String: Any], let list = root["subscriptions"] as? [Any],
              root.keys.allSatisfy({ $0 == "subscriptions" }) else {
            throw .malformed("expected {\"subscriptions\": [...]}")
        }
        var subscriptions: [Subscription] = []
        for entry in list {
            guard let item = entry as? [String: Any], let target = item["target"] as? String,
                  let events = item["events"] as? [String] else {
                throw .malformed("each subscription has a \"target\" and a list of \"events\"")
            }
            if let unknown = item.keys.first(where: { !["id", "target", "events", "prefix", "suffix"].contains($0) }) {
                throw .malformed("unknown member '\(unknown)' (a subscription has id, target, events, prefix, suffix)")
            }
            let text = { (name: String) throws(Invalid) -> String in
                guard let value = item[name] else { return "" }
                guard let string = value as? String else { throw .malformed("\(name) is a string") }
                return string
            }
            subscriptions.append(Subscription(id: try text("id"), target: target, events: events,
                                              prefix: try text("prefix"), suffix: try text("suffix")))
        }
        self.init(subscriptions: subscriptions)
    }

    /// The canonical JSON the catalog keeps and the admin API answers.
    public var json: String {
        let items = subscriptions.map { subscription in
            "{\"id\":\(EventJSON.string(subscription.id)),\"target\":\(EventJSON.string(subscription.target)),"
                + "\"events\":[\(subscription.events.map(EventJSON.string).joined(separator: ","))],"
                + "\"prefix\":\(EventJSON.string(subscription.prefix)),\"suffix\":\(EventJSON.string(subscription.suffix))}"
        }
        return "{\"subscriptions\":[\(items.joined(separator: ","))]}"
    }
}

/// The subscriptions of every bucket as last read from the catalog (`KeyDirectory` reloads them
/// with the access version, so every node follows a change within about a second), and the
/// targets this node may send to. The HTTP layer asks it for an `EventDraft` before a change
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
    private let byBucket = Mutex([String: [NotificationConfiguration.Subscription]]())

    public init() {}

    /// True when no bucket has a subscription (nothing to look up for an event).
    public var isIdle: Bool { byBucket.withLock { $0.isEmpty } }

    /// Sets the targets and node name (at start).
    public func configure(_ settings: Settings) {
        self.settings.withLock { $0 = settings }
    }

    /// The configured target names.
    public var targets: Set<String> { settings.withLock { $0.targets } }

    /// Replaces every bucket's subscriptions with those of `settings` (unreadable ones are skipped and returned).
    @discardableResult
    public func update(_ settings: [BucketAccessSetting]) -> [String] {
        var fresh: [String: [NotificationConfiguration.Subscription]] = [:]
        var unreadable: [String] = []
        for setting in settings where setting.name == .notifications {
            do throws(NotificationConfiguration.Invalid) {
                fresh[setting.bucket] = try NotificationConfiguration(json: Array(setting.value.utf8)).subscriptions
            } catch {
                unreadable.append(setting.bucket)
            }
        }
        byBucket.withLock { $0 = fresh }
        return unreadable
    }

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
        let (subscriptions, settings) = (byBucket.withLock { $0[String(bucket)] }, self.settings.withLock { $0 })
        guard let subscriptions, !subscriptions.isEmpty else { return nil }
        let objectKey = String(key.rawValue.utf8.dropFirst(bucket.utf8.count + 1)) ?? ""
        let targets = subscriptions.filter { settings.targets.contains($0.target) && $0.wants(name, objectKey: objectKey) }
            .map { EventTarget(target: $0.target, configurationID: $0.id) }
        guard !targets.isEmpty else { return nil }
        return EventDraft(name: name, targets: targets, principal: principal, requestID: requestID ?? RequestID.next(),
                          sourceIP: sourceIP, dialect: dialect, node: settings.node, region: settings.region)
    }
}

import BlobCore
import Foundation

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

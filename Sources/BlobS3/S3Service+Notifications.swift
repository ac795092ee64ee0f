import BlobStore
import BlobCore
import HTTPCore
import MicroHTTPD

/// Event subscriptions in the S3 dialect: Put and GetBucketNotificationConfiguration, with
/// QueueConfiguration elements whose Queue is `arn:blobd:sqs::NAME:webhook` (a
/// `--notify-webhook` target). Kept as the /v1 JSON (`NotificationConfiguration`).
extension S3Service {
    /// The draft of an event for a change about to commit, if a subscription wants it.
    func events(_ name: String, _ key: BlobKey, _ head: HTTPRequestHead, _ requestID: String) -> EventDraft? {
        events.draft(name, key: key, head: head, dialect: "s3", requestID: requestID)
    }

    /// PutBucketNotificationConfiguration.
    func receivePutNotification(_ head: HTTPRequestHead, bucket: String, requestID: String) throws -> HTTPRequestAction {
        try requireBucket(bucket)
        let tooLarge = S3Error(.malformedXML, "The notification configuration is larger than 64 KiB.")
        return try receiveSetting(head, bucket: bucket, limit: 64 * 1024, tooLarge: tooLarge, requestID: requestID) { [self] body in
            let configuration = try Self.notificationConfiguration(body, targets: events.targets)
            try setAccess(bucket, .notifications, to: configuration.subscriptions.isEmpty ? nil : configuration.json)
            return HTTPResponse(status: 200, headers: [("x-amz-request-id", requestID)])
        }
    }

    /// GetBucketNotificationConfiguration: an empty configuration when none is set, as S3 answers.
    func getNotification(bucket: String, requestID: String) throws -> HTTPResponse {
        try requireBucket(bucket)
        var configurations = ""
        if let stored = try accessSetting(bucket, .notifications),
           let configuration = try? NotificationConfiguration(json: Array(stored.utf8)) {
            for subscription in configuration.subscriptions {
                configurations += "<QueueConfiguration>" + XML.element("Id", subscription.id)
                    + XML.element("Queue", "arn:blobd:sqs::\(subscription.target):webhook")
                    + subscription.events.map { XML.element("Event", $0) }.joined()
                var rules = ""
                if !subscription.prefix.isEmpty { rules += "<FilterRule><Name>Prefix</Name>" + XML.element("Value", subscription.prefix) + "</FilterRule>" }
                if !subscription.suffix.isEmpty { rules += "<FilterRule><Name>Suffix</Name>" + XML.element("Value", subscription.suffix) + "</FilterRule>" }
                if !rules.isEmpty { configurations += "<Filter><S3Key>" + rules + "</S3Key></Filter>" }
                configurations += "</QueueConfiguration>"
            }
        }
        return xmlResponse(XML.declaration + "<NotificationConfiguration xmlns=\"\(XML.namespace)\">" + configurations
                           + "</NotificationConfiguration>", requestID: requestID)
    }

    /// The subscriptions of a NotificationConfiguration body: 501 naming a Topic, CloudFunction
    /// or EventBridge configuration; InvalidArgument for a queue that is no configured target.
    static func notificationConfiguration(_ body: [UInt8], targets: Set<String>) throws -> NotificationConfiguration {
        let root = try XML.parse(body, maxChildren: NotificationConfiguration.maximumSubscriptions)
        guard root.name == "NotificationConfiguration" else { throw XMLReader.malformed }
        var subscriptions: [NotificationConfiguration.Subscription] = []
        for child in root.children {
            switch child.name {
            case "QueueConfiguration": subscriptions.append(try queueConfiguration(child))
            case "TopicConfiguration", "CloudFunctionConfiguration", "EventBridgeConfiguration":
                throw S3Error(.notImplemented, "blobd sends events only to webhooks (QueueConfiguration); \(child.name) is not supported.")
            default:
                throw S3Error(.malformedXML, "Unknown element \(child.name) in NotificationConfiguration.")
            }
        }
        do throws(NotificationConfiguration.Invalid) {
            return try NotificationConfiguration(subscriptions: subscriptions).validated(targets: targets)
        } catch {
            switch error {
            case .malformed(let text): throw S3Error(.invalidArgument, text.prefix(1).uppercased() + text.dropFirst() + ".")
            case .unknownTarget(let name):
                throw S3Error(.invalidArgument, "Unable to validate the following destination configurations: "
                              + "arn:blobd:sqs::\(name):webhook is not a configured --notify-webhook target.")
            }
        }
    }

    private static func queueConfiguration(_ node: XMLNode) throws -> NotificationConfiguration.Subscription {
        guard let queue = node.value("Queue") else { throw S3Error(.invalidArgument, "A QueueConfiguration needs a Queue.") }
        let parts = queue.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 6, parts[0] == "arn", parts[1] == "blobd", parts[2] == "sqs", parts[5] == "webhook", !parts[4].isEmpty else {
            throw S3Error(.invalidArgument, "Unable to validate the following destination configurations: "
                          + "\(queue) is not arn:blobd:sqs::NAME:webhook.")
        }
        var prefix = "", suffix = ""
        for child in node.children {
            switch child.name {
            case "Id", "Queue", "Event": continue
            case "Filter":
                for key in child.children {
                    guard key.name == "S3Key" else { throw S3Error(.notImplemented, "blobd filters events by S3Key only, not \(key.name).") }
                    for rule in key.children where rule.name == "FilterRule" {
                        switch rule.value("Name")?.lowercased() {
                        case "prefix": prefix = rule.value("Value") ?? ""
                        case "suffix": suffix = rule.value("Value") ?? ""
                        default: throw S3Error(.invalidArgument, "A FilterRule's Name is prefix or suffix.")
                        }
                    }
                }
            default: throw S3Error(.notImplemented, "blobd does not support \(child.name) in a QueueConfiguration.")
            }
        }
        let events = node.children.filter { $0.name == "Event" }.map { $0.text.trimmingCharacters() }
        return .init(id: node.value("Id") ?? "", target: String(parts[4]), events: events, prefix: prefix, suffix: suffix)
    }
}

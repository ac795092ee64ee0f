import BlobStore
import Foundation
import HTTPCore
import MicroHTTPD

/// `/v1/admin/buckets/{bucket}/notifications` (a bucket's event subscriptions, needs `admin` on
/// it) and `GET /v1/admin/events` (the event queue, needs `admin:*`).
extension BlobService {
    /// GET: the stored subscriptions; 404 when the bucket has none, or does not exist.
    func getNotifications(bucket: String) throws -> HTTPResponse {
        guard try store.catalog.buckets.bucket(bucket) != nil else { throw StoreError.bucketNotFound }
        guard let stored = try store.settings.stored(bucket, .notifications) else {
            throw HTTPError.settingNotFound("The bucket \(bucket) has no notification configuration.")
        }
        return Self.rawJSONResponse(status: 200, stored)
    }

    /// PUT `{"subscriptions": [...]}`: 200 with the stored JSON; 400 for a target that is not
    /// configured (`--notify-webhook`).
    func putNotifications(_ head: HTTPRequestHead, bucket: String) throws -> HTTPRequestAction {
        try Self.requireJSON(head)
        return .receive(BufferedBody(limit: Self.maxAdminBody, committers: committers) { [self] body in
            do {
                guard let body else { throw StoreError.tooLarge(limit: UInt64(Self.maxAdminBody)) }
                let configuration: NotificationConfiguration
                do throws(NotificationConfiguration.Invalid) {
                    configuration = try NotificationConfiguration(json: body).validated(targets: events.targets)
                } catch {
                    switch error {
                    case .malformed(let text): throw HTTPError.badRequest("Invalid subscriptions: \(text).")
                    case .unknownTarget(let name):
                        throw HTTPError.badRequest("Unknown target '\(name)': it is not a configured --notify-webhook.")
                    }
                }
                let json = configuration.json
                try store.settings.set(bucket, .notifications, to: json)
                return Self.rawJSONResponse(status: 200, json)
            } catch {
                return failure(error)
            }
        })
    }

    /// DELETE: 204, set or not; 404 when the bucket does not exist.
    func deleteNotifications(bucket: String) throws -> HTTPResponse {
        try store.settings.set(bucket, .notifications, to: nil)
        return HTTPResponse(status: 204, headers: [Self.noStore])
    }

    /// GET /v1/admin/events?after=CURSOR&limit=N: the queue, oldest first.
    func listEvents(_ head: HTTPRequestHead) throws -> HTTPResponse {
        let query = PercentEncoding.decodeQuery(head.query ?? []) ?? []
        func value(_ name: String) -> String? { query.first { $0.name == name }.map { String(decoding: $0.value, as: UTF8.self) } }
        let after = try value("after").map { text throws(HTTPError) -> Int64 in
            guard let number = Int64(text), number >= 0 else { throw .badRequest("after is a cursor from an earlier answer.") }
            return number
        }
        let limit = try value("limit").map { text throws(HTTPError) -> Int in
            guard let number = Int(text), (1...1000).contains(number) else { throw .badRequest("limit is 1 to 1000.") }
            return number
        } ?? 100
        let (events, total) = try store.catalog.events.pendingEvents(after: after, limit: limit)
        let items: [JSON] = events.map { event in
            .object([("id", .string(String(event.id))), ("target", .string(event.target)), ("bucket", .string(event.bucket)),
                     ("key", .string(String(decoding: event.key, as: UTF8.self))), ("event", .string(event.event)),
                     ("attempts", .number(Int64(event.attempts))), ("next_attempt", .string(EventJSON.isoTime(millis: event.nextAttempt))),
                     ("created", .string(EventJSON.isoTime(millis: event.created)))])
        }
        let next: JSON = events.count == limit ? events.last.map { .string(String($0.id)) } ?? .null : .null
        return Self.jsonResponse(status: 200, .object([("pending", .number(Int64(total))), ("events", .array(items)), ("next", next)]))
    }

    /// A JSON body given as text.
    static func rawJSONResponse(status: Int, _ text: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json"), noStore], body: .bytes(Array(text.utf8)))
    }
}

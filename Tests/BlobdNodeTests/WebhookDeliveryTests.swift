import BlobCore
import CCrypto
import Foundation
import HTTPTesting
import Testing
import Webhooks

/// Event delivery of a node started in process, to a receiver in the test: the Standard
/// Webhooks headers and signature (checked with OpenSSL's own HMAC), a retry after a refusal
/// whose backoff passes by moving a ManualClock rather than by waiting, and a stop that leaves
/// no delivery running.
@Suite struct WebhookDeliveryTests {
    static let secret = Array("0123456789abcdef0123".utf8)
    static let subscription = Array(#"{"subscriptions":[{"id":"all","target":"hook","events":["s3:ObjectCreated:*"]}]}"#.utf8)

    @Test func aRefusedEventIsSentAgainOnlyOnceItsBackoffHasPassed() throws {
        let clock = ManualClock()
        let receiver = try Receiver { _, index in index == 0 ? (500, "") : (204, "") }
        var options = TestNode.Options()
        options.clock = clock.clock
        options.webhooks = ["hook": WebhookTarget(url: try receiver.url(), secret: Self.secret)]
        let node = try TestNode(options)
        #expect(try node.v1.send("PUT", "/v1/buckets/evt").status == 201)
        let subscribed = try node.v1.send("PUT", "/v1/admin/buckets/evt/notifications", ["Content-Type: application/json"],
                                          body: Self.subscription)
        #expect(subscribed.status == 200, "\(subscribed.text)")
        #expect(try node.v1.put("/v1/blobs/evt/a.txt", Array("hello".utf8)).status == 201)
        #expect(receiver.waitFor(1).count == 1)
        // The first retry waits 1 s of the node's clock, which stands still: nothing more comes.
        #expect(!eventually(within: 1) { receiver.requests.count > 1 })
        clock.advance(seconds: 2)
        let both = receiver.waitFor(2)
        try #require(both.count == 2)
        for request in both { try Self.checkSignature(request) }
        #expect(both[0].header("webhook-id") == both[1].header("webhook-id"))
        #expect(both[1].header("webhook-timestamp") == String(clock.clock.seconds))
        let record = try #require((both[1].json["Records"] as? [[String: Any]])?.first)
        #expect(record["eventName"] as? String == "ObjectCreated:Put")
        #expect(((record["s3"] as? [String: Any])?["object"] as? [String: Any])?["key"] as? String == "a.txt")
        // Delivered: the outbox empties; stopped: nothing is sent any more.
        #expect(try eventually { try node.node.store.catalog.events.eventQueueStats().values.allSatisfy { $0.count == 0 } })
        node.stop()
        clock.advance(seconds: 600)
        usleep(300_000)
        #expect(receiver.requests.count == 2)
    }

    /// What Standard Webhooks asks of each delivery: POST to the target's path, a User-Agent
    /// naming blobd, and `v1,` base64(HMAC-SHA256(secret, "id.timestamp.body")).
    static func checkSignature(_ request: Received) throws {
        #expect(request.method == "POST")
        #expect(request.path == "/hook")
        #expect(request.header("User-Agent") == "blobd/test")
        #expect(request.header("Content-Type") == "application/json")
        let id = try #require(request.header("webhook-id"))
        let timestamp = try #require(request.header("webhook-timestamp"))
        let signed = Array("\(id).\(timestamp).".utf8) + request.body
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        _ = HMAC(EVP_sha256(), secret, Int32(secret.count), signed, signed.count, &digest, &length)
        #expect(length == 32)
        #expect(request.header("webhook-signature") == "v1," + Data(digest).base64EncodedString())
    }

    @Test func aNodeStartsItsServicesInOrderAndStopsThemAll() throws {
        let receiver = try Receiver { _, _ in (204, "") }
        var options = TestNode.Options()
        options.webhooks = ["hook": WebhookTarget(url: try receiver.url())]
        let node = try TestNode(options)
        #expect(node.node.serviceNames == ["blobd-clean-stop", "blobd-restamp", "blobd-keys", "blobd-commit-pool", "blobd-sweep", "blobd-expiry",
                                           "blobd-events", "blobd-v1", "blobd-quiesce"])
        #expect(try node.v1.get("/healthz").status == 200)
        #expect(!FileManager.default.fileExists(atPath: node.directory.path + "/data/tmp/clean-stop"))
        node.stop()
        #expect(throws: (any Error).self) { try node.v1.get("/healthz") }
        #expect(FileManager.default.fileExists(atPath: node.directory.path + "/data/tmp/clean-stop"))
    }
}

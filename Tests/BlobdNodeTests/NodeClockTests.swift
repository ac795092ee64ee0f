import BlobCore
import Foundation
import HTTPTesting
import Testing

/// The dialects read the time of day from the node's clock: a run-time key and a share link
/// stop working exactly when a ManualClock passes their deadline, with no sleep and no faketime.
@Suite struct NodeClockTests {
    static let tokens = "admin read,write,delete,admin,share\n"

    @Test func aKeyAndAShareLinkExpireByTheNodesClock() throws {
        let clock = ManualClock()
        var options = TestNode.Options()
        options.clock = clock.clock
        options.tokens = Self.tokens
        let node = try TestNode(options)
        let admin = "Authorization: Bearer admin"
        let start = clock.clock.seconds
        #expect(try node.v1.put("/v1/blobs/docs/a.txt", Array("hello".utf8), [admin]).status == 201)
        let made = try node.v1.send("POST", "/v1/admin/keys", [admin, "Content-Type: application/json"],
                                    body: Array(#"{"name":"temp","grants":["read:docs/*"],"expires_in":60}"#.utf8))
        #expect(made.status == 201)
        #expect(made.json["created"] as? String == HTTPDate.formatRFC3339(start))
        #expect(made.json["expires"] as? String == HTTPDate.formatRFC3339(start + 60))
        let token = try #require(made.json["token"] as? String)
        let shared = try node.v1.send("POST", "/v1/shares", [admin, "Content-Type: application/json"],
                                      body: Array(#"{"key":"docs/a.txt","allow":"read","expires_in":30}"#.utf8))
        #expect(shared.status == 201)
        let id = try #require(shared.json["id"] as? String)

        clock.advance(seconds: 29)
        #expect(try node.v1.get("/s/" + id).text == "hello")
        clock.advance(seconds: 1)
        #expect(try node.v1.get("/s/" + id).status == 404)
        #expect(try node.v1.get("/v1/blobs/docs/a.txt", ["Authorization: Bearer " + token]).status == 200)
        clock.advance(seconds: 30)
        let refused = try node.v1.get("/v1/blobs/docs/a.txt", ["Authorization: Bearer " + token])
        #expect(refused.status == 401)
        #expect(refused.header("Content-Type") == "application/problem+json")
    }
}

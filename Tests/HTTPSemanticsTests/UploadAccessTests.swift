import Foundation
import HTTPTesting
import LiveBlobd
import Testing

/// Deciding who may touch a tus upload reads it from the catalog; a read that fails refuses
/// (503), it never lets any grant through (issue 35, item 2).
@Suite struct UploadAccessTests {
    @Test func aCatalogErrorWhileDecidingRefuses() throws {
        let failures = FailingUploadReads()
        var settings = ServerSettings(tokens: "owner write:bbb/mine/*\nother write:bbb/theirs/*\n")
        settings.failingUploadReads = failures
        let server = try TestServer(.inProcess, settings)
        let tus = Tus(client: server.v1)
        let created = try tus.create(length: 5, metadata: ["key": "bbb/mine/a.txt"], extra: ["Authorization: Bearer owner"])
        #expect(created.status == 201)
        let location = try #require(created.header("Location"))
        let asOther = ["Tus-Resumable: 1.0.0", "Authorization: Bearer other"]
        #expect(try server.v1.send("HEAD", location, asOther).status == 403)
        // The read that decides fails; the handler's own read would have succeeded.
        failures.failNext(1)
        let refused = try server.v1.send("HEAD", location, asOther)
        #expect(refused.status == 503)
        #expect(refused.header("Upload-Offset") == nil)
        failures.failNext(1)
        #expect(try server.v1.send("DELETE", location, asOther).status == 503)
        #expect(try server.v1.send("HEAD", location, ["Tus-Resumable: 1.0.0", "Authorization: Bearer owner"]).status == 200)
    }
}

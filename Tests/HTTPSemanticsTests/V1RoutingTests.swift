import Foundation
import HTTPTesting
import LiveBlobd
import Testing

/// The /v1 routes and the error → problem map, as a client sees them.
@Suite struct V1RoutingTests {
    /// The problem details of an error answer.
    func expectProblem(_ response: TestResponse, _ status: Int, _ title: String, _ what: String,
                       sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(response.status == status, "\(what)", sourceLocation: sourceLocation)
        #expect(response.header("Content-Type") == "application/problem+json", "\(what)", sourceLocation: sourceLocation)
        #expect(response.json["status"] as? Int == status, "\(what)", sourceLocation: sourceLocation)
        #expect(response.json["title"] as? String == title, "\(what)", sourceLocation: sourceLocation)
    }

    @Test(arguments: Mode.selected) func routes(_ mode: Mode) throws {
        let server = try TestServer(mode)
        let v1 = server.v1
        #expect(try v1.get("/healthz").status == 200)
        #expect(try v1.get("/readyz").status == 200)
        let metrics = try v1.get("/metrics")
        #expect(metrics.status == 200)
        #expect(metrics.text.contains("# TYPE"))
        #expect(try v1.put("/v1/blobs/aaa/b%20c", Array("x".utf8)).status == 201)
        let listing = try v1.get("/v1/blobs?prefix=aaa/")
        #expect(listing.status == 200)
        #expect(listing.text.contains("\"aaa/b c\""), "the key decoded: \(listing.text)")
        expectProblem(try v1.get("/v1/nothing"), 404, "Not found", "no route")
        expectProblem(try v1.get("/"), 404, "Not found", "the root")
        let notAllowed = try v1.send("PATCH", "/v1/blobs/aaa/b%20c", body: [1])
        expectProblem(notAllowed, 405, "Method not allowed", "PATCH on a blob")
        #expect(notAllowed.header("Allow")?.contains("GET") == true)
        expectProblem(try v1.send("DELETE", "/v1/blobs"), 405, "Method not allowed", "DELETE on the collection")
    }

    @Test(arguments: Mode.selected) func errorMap(_ mode: Mode) throws {
        let server = try TestServer(mode, ServerSettings(maxBlobSize: 10))
        let v1 = server.v1
        expectProblem(try v1.get("/v1/blobs/missing"), 404, "Not found", "a missing blob")
        expectProblem(try v1.put("/v1/blobs/a/../b", [1]), 400, "Invalid key", "a dot segment")
        expectProblem(try v1.put("/v1/blobs/bad%zz", [1]), 400, "Bad request", "bad percent-encoding")
        expectProblem(try v1.put("/v1/blobs/big", testBytes(11)), 413, "Content too large", "over --max-blob-size")
        let hash = String(repeating: "0", count: 64)
        expectProblem(try v1.put("/v1/blobs/\(hash)", [1]), 400, "Key is not the content's digest", "a content address")
        expectProblem(try v1.send("PATCH", "/v1/uploads/00000000000000000000000000000000",
                                  ["Tus-Resumable: 1.0.0", "Upload-Offset: 0", "Content-Type: application/offset+octet-stream"],
                                  body: [1]), 404, "Upload not found", "an unknown upload")
        expectProblem(try v1.get("/v1/blobs/missing", ["Range: bytes=0-0"]), 404, "Not found", "a range of nothing")
    }

    @Test(arguments: Mode.selected) func authorization(_ mode: Mode) throws {
        let server = try TestServer(mode, ServerSettings(tokens: "rw read,write\nr read\n"))
        let v1 = server.v1
        let anonymous = try v1.get("/v1/blobs/k")
        expectProblem(anonymous, 401, "Unauthorized", "no token")
        #expect(anonymous.header("WWW-Authenticate") == "Bearer realm=\"blobd\"")
        expectProblem(try v1.get("/v1/blobs/k", ["Authorization: Bearer nope"]), 401, "Unauthorized", "an unknown token")
        let readOnly = try v1.put("/v1/blobs/k", [1], ["Authorization: Bearer r"])
        expectProblem(readOnly, 403, "Forbidden", "read scope writing")
        #expect(readOnly.header("WWW-Authenticate") == "Bearer realm=\"blobd\", error=\"insufficient_scope\", scope=\"write\"")
        #expect(try v1.put("/v1/blobs/k", [1], ["Authorization: Bearer rw"]).status == 201)
        #expect(try v1.get("/v1/blobs/k", ["Authorization: Bearer r"]).body == [1])
    }
}

import Foundation
import HTTPTesting
import Testing
import TusHooks

/// tusd's blocking hooks (`--hook-url`) run by a node in process and answered by a hook in the
/// test: pre-create rejects an upload by its metadata before anything is stored, a key the
/// hook moves an upload to is checked against the caller's grants, and pre-finish adds a
/// header to the answer of the PATCH that completes an upload.
@Suite struct BlockingHookTests {
    static let tokens = """
        admin read,write,delete,admin
        inbox create:ups/*,read:ups/*

        """

    /// The hook: rejects `.exe`, moves `move-me` to `vault/plan.txt`, and adds `X-Hook` at pre-finish.
    static func answer(_ request: Received, _ index: Int) -> (status: Int, body: String) {
        let type = request.json["Type"] as? String
        let upload = (request.json["Event"] as? [String: Any])?["Upload"] as? [String: Any]
        let metadata = upload?["MetaData"] as? [String: String] ?? [:]
        let key = metadata["key"] ?? ""
        switch type {
        case "pre-create" where key.hasSuffix(".exe"):
            return (200, #"{"RejectUpload":true,"HTTPResponse":{"StatusCode":403,"Body":"no executables"}}"#)
        case "pre-create" where key.hasSuffix("move-me"):
            return (200, #"{"ChangeFileInfo":{"MetaData":{"key":"vault/plan.txt"}}}"#)
        case "pre-finish":
            return (200, #"{"HTTPResponse":{"Header":{"X-Hook":"finished"}}}"#)
        default:
            return (200, "{}")
        }
    }

    static func create(_ node: TestNode, _ key: String, length: Int) throws -> TestResponse {
        try node.v1.send("POST", "/v1/uploads", ["Authorization: Bearer inbox", "Tus-Resumable: 1.0.0", "Upload-Length: \(length)",
                                                "Upload-Metadata: key \(Data(key.utf8).base64EncodedString())"])
    }

    @Test func preCreateRejectsOrMovesWithinTheGrantsAndPreFinishAnswers() throws {
        let hook = try Receiver(Self.answer)
        var options = TestNode.Options()
        options.tokens = Self.tokens
        options.hooks = HookSettings(url: try hook.url("/hooks"), events: [.preCreate, .preFinish], timeout: 5)
        let node = try TestNode(options)
        #expect(try node.v1.put("/v1/blobs/vault/plan.txt", Array("the plan".utf8), ["Authorization: Bearer admin"]).status == 201)
        let rejected = try Self.create(node, "ups/tool.exe", length: 5)
        #expect(rejected.status == 403)
        #expect(rejected.text == "no executables")
        let moved = try Self.create(node, "ups/move-me", length: 5)
        #expect(moved.status == 403)
        #expect(moved.header("Content-Type") == "application/problem+json")
        #expect(try node.v1.get("/v1/blobs/vault/plan.txt", ["Authorization: Bearer admin"]).text == "the plan")
        let created = try Self.create(node, "ups/notes.txt", length: 5)
        #expect(created.status == 201)
        let location = try #require(created.header("Location"))
        let patched = try node.v1.send("PATCH", location, ["Authorization: Bearer inbox", "Tus-Resumable: 1.0.0", "Upload-Offset: 0",
                                                           "Content-Type: application/offset+octet-stream"], body: Array("hello".utf8))
        #expect(patched.status == 204)
        #expect(patched.header("X-Hook") == "finished")
        #expect(try node.v1.get("/v1/blobs/ups/notes.txt", ["Authorization: Bearer inbox"]).text == "hello")
        #expect(try node.v1.get("/v1/blobs/ups/tool.exe", ["Authorization: Bearer inbox"]).status == 404)
        let calls = hook.requests
        // The admin's PUT, the three creations, the PATCH that completes.
        #expect(calls.map { $0.json["Type"] as? String } == ["pre-create", "pre-finish", "pre-create", "pre-create", "pre-create", "pre-finish"])
        #expect(calls.allSatisfy { $0.method == "POST" && $0.path == "/hooks" && $0.header("Authorization") == nil })
    }
}

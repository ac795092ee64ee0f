import Foundation
import HTTPTesting
import LiveBlobd
import Testing

/// tus 1.0.0 requests through a test client.
struct Tus {
    let client: TestClient

    func create(length: Int?, metadata: [String: String] = [:], extra: [String] = [], body: [UInt8] = []) throws -> TestResponse {
        let encoded = metadata.sorted { $0.key < $1.key }.map { "\($0.key) \(Data($0.value.utf8).base64EncodedString())" }
        var fields = ["Tus-Resumable: 1.0.0"]
        fields.append(length.map { "Upload-Length: \($0)" } ?? "Upload-Defer-Length: 1")
        if !encoded.isEmpty { fields.append("Upload-Metadata: \(encoded.joined(separator: ","))") }
        return try client.send("POST", "/v1/uploads", fields + extra, body: body)
    }

    func patch(_ location: String, offset: Int, _ bytes: [UInt8], extra: [String] = []) throws -> TestResponse {
        try client.send("PATCH", location, ["Tus-Resumable: 1.0.0", "Upload-Offset: \(offset)",
                                            "Content-Type: application/offset+octet-stream"] + extra, body: bytes)
    }

    func head(_ location: String) throws -> TestResponse {
        try client.send("HEAD", location, ["Tus-Resumable: 1.0.0"])
    }
}

@Suite struct TusTests {
    @Test(arguments: Mode.selected) func discovery(_ mode: Mode) throws {
        let server = try TestServer(mode, ServerSettings(maxBlobSize: 1_000_000))
        let options = try server.v1.send("OPTIONS", "/v1/uploads")
        #expect(options.status == 204)
        #expect(options.header("Tus-Version") == "1.0.0")
        #expect(options.header("Tus-Resumable") == "1.0.0")
        #expect(options.header("Tus-Max-Size") == "1000000")
        #expect(options.header("Tus-Checksum-Algorithm") == "sha1,sha256")
        let extensions = Set((options.header("Tus-Extension") ?? "").split(separator: ",").map(String.init))
        #expect(extensions == ["creation", "creation-with-upload", "creation-defer-length", "termination", "checksum", "expiration"])
        let tooLarge = try Tus(client: server.v1).create(length: 1_000_001)
        #expect(tooLarge.status == 413)
        #expect(tooLarge.header("Tus-Resumable") == "1.0.0")
    }

    @Test(arguments: Mode.selected) func creationAndSeveralPatches(_ mode: Mode) throws {
        let server = try TestServer(mode)
        let tus = Tus(client: server.v1)
        let bytes = testBytes(3_000_000, seed: 21)
        let created = try tus.create(length: bytes.count, metadata: ["key": "tus/movie.bin", "filetype": "video/mp4"])
        #expect(created.status == 201)
        #expect(created.header("Tus-Resumable") == "1.0.0")
        #expect(created.header("Upload-Expires").flatMap(parseHTTPDate) != nil)
        let location = try #require(created.header("Location"))
        #expect(location.hasPrefix("/v1/uploads/"))
        #expect(try tus.head(location).header("Upload-Offset") == "0")
        #expect(try tus.head(location).header("Upload-Length") == "3000000")
        #expect(try tus.head(location).header("Cache-Control") == "no-store")

        for (start, end) in [(0, 1_000_000), (1_000_000, 2_500_000), (2_500_000, 3_000_000)] {
            let patch = try tus.patch(location, offset: start, Array(bytes[start..<end]))
            #expect(patch.status == 204)
            #expect(patch.header("Upload-Offset") == String(end))
            #expect(patch.header("Tus-Resumable") == "1.0.0")
            if end < bytes.count {
                #expect(try server.v1.get("/v1/blobs/tus/movie.bin").status == 404, "not visible before the last byte")
            }
        }
        let blob = try server.v1.get("/v1/blobs/tus/movie.bin")
        #expect(blob.status == 200)
        #expect(blob.body == bytes)
        #expect(blob.header("Content-Type") == "video/mp4")
        // A completed upload still answers HEAD.
        let done = try tus.head(location)
        #expect(done.status == 200)
        #expect(done.header("Upload-Offset") == "3000000")
        #expect(done.header("Content-Location") == "/v1/blobs/tus/movie.bin")
    }

    @Test(arguments: Mode.selected) func contentAddressedAndCreationWithUpload(_ mode: Mode) throws {
        let server = try TestServer(mode)
        let tus = Tus(client: server.v1)
        let created = try tus.create(length: 6, extra: ["Content-Type: application/offset+octet-stream"], body: Array("hello\n".utf8))
        #expect(created.status == 201)
        #expect(created.header("Upload-Offset") == "6")
        let key = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
        #expect(created.header("Content-Location") == "/v1/blobs/" + key)
        #expect(try server.v1.get("/v1/blobs/" + key).text == "hello\n")
        // An empty upload is complete at creation.
        let empty = try tus.create(length: 0, metadata: ["key": "empty", "content-type": "text/plain"])
        #expect(empty.status == 201)
        let emptyBlob = try server.v1.get("/v1/blobs/empty")
        #expect(emptyBlob.status == 200)
        #expect(emptyBlob.body.isEmpty)
        #expect(emptyBlob.header("Content-Type") == "text/plain")
    }

    @Test(arguments: Mode.selected) func protocolErrors(_ mode: Mode) throws {
        let server = try TestServer(mode)
        let tus = Tus(client: server.v1)
        let location = try #require(try tus.create(length: 10).header("Location"))
        // Wrong offset: 409, and nothing changes.
        let wrong = try tus.patch(location, offset: 5, Array("abcde".utf8))
        #expect(wrong.status == 409)
        #expect(wrong.header("Content-Type") == "application/problem+json")
        #expect(try tus.head(location).header("Upload-Offset") == "0")
        // Wrong content type: 415.
        let plain = try server.v1.send("PATCH", location, ["Tus-Resumable: 1.0.0", "Upload-Offset: 0", "Content-Type: text/plain"],
                                       body: [1, 2])
        #expect(plain.status == 415)
        // Missing or unsupported Tus-Resumable: 412 with Tus-Version.
        for version in [[], ["Tus-Resumable: 0.2.2"]] {
            let response = try server.v1.send("HEAD", location, version)
            #expect(response.status == 412)
            #expect(response.header("Tus-Version") == "1.0.0")
        }
        // More bytes than Upload-Length: 413, offset unchanged.
        #expect(try tus.patch(location, offset: 0, testBytes(11)).status == 413)
        #expect(try tus.head(location).header("Upload-Offset") == "0")
        // Bad creation requests.
        #expect(try server.v1.send("POST", "/v1/uploads", ["Tus-Resumable: 1.0.0"]).status == 400)
        #expect(try tus.create(length: 5, metadata: ["key": "a/../b"]).status == 400)
        #expect(try server.v1.send("POST", "/v1/uploads", ["Tus-Resumable: 1.0.0", "Upload-Length: 5", "Upload-Metadata: key !!!"])
            .status == 400)
        #expect(try tus.head("/v1/uploads/00000000000000000000000000000000").status == 404)
        #expect(try tus.head("/v1/uploads/not-an-id").status == 404)
    }

    @Test(arguments: Mode.selected) func checksums(_ mode: Mode) throws {
        let server = try TestServer(mode)
        let tus = Tus(client: server.v1)
        let location = try #require(try tus.create(length: 10, metadata: ["key": "checked"]).header("Location"))
        let first = Array("hello".utf8)
        // sha1("hello") and sha256("hello").
        let sha1 = "qvTGHdzF6KLavt4PO0gs2a6pQ00="
        let sha256 = "LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ="
        let mismatch = try tus.patch(location, offset: 0, first, extra: ["Upload-Checksum: sha1 \(sha256)"])
        #expect(mismatch.status == 400, "a sha1 digest must be 20 bytes")
        let bad = try tus.patch(location, offset: 0, Array("HELLO".utf8), extra: ["Upload-Checksum: sha1 \(sha1)"])
        #expect(bad.status == 460)
        #expect(try tus.head(location).header("Upload-Offset") == "0", "the chunk was discarded")
        #expect(try tus.patch(location, offset: 0, first, extra: ["Upload-Checksum: sha1 \(sha1)"]).status == 204)
        #expect(try tus.patch(location, offset: 5, first, extra: ["Upload-Checksum: md5 XUFAKrxLKna5cZ2REBfFkg=="]).status == 400)
        #expect(try tus.patch(location, offset: 5, first, extra: ["Upload-Checksum: sha256 \(sha256)"]).status == 204)
        #expect(try server.v1.get("/v1/blobs/checked").text == "hellohello")
    }

    /// Upload-Metadata `content-type`, `cache-control`, `content-disposition` and
    /// `content-language` are the blob's headers; one that is not a field value is refused.
    @Test(arguments: Mode.selected) func metadataGivesTheBlobItsHeaders(_ mode: Mode) throws {
        let server = try TestServer(mode)
        let tus = Tus(client: server.v1)
        let metadata = ["key": "tus/page.html", "content-type": "text/html; charset=utf-8", "cache-control": "max-age=600",
                        "content-disposition": "inline; filename=\"page.html\"", "content-language": "de-CH, en"]
        let location = try #require(try tus.create(length: 5, metadata: metadata).header("Location"))
        #expect(try tus.patch(location, offset: 0, Array("<p/>\n".utf8)).status == 204)
        let blob = try server.v1.get("/v1/blobs/tus/page.html")
        #expect(blob.status == 200)
        #expect(blob.text == "<p/>\n")
        #expect(blob.header("Content-Type") == "text/html; charset=utf-8")
        #expect(blob.header("Cache-Control") == "max-age=600")
        #expect(blob.header("Content-Disposition") == "inline; filename=\"page.html\"")
        #expect(blob.header("Content-Language") == "de-CH, en")
        let plain = try #require(try tus.create(length: 1, metadata: ["key": "tus/plain"]).header("Location"))
        #expect(try tus.patch(plain, offset: 0, [0x61]).status == 204)
        #expect(try server.v1.get("/v1/blobs/tus/plain").header("Content-Language") == nil)
        let refused = try tus.create(length: 1, metadata: ["content-language": "fran\u{E7}ais"])
        #expect(refused.status == 400)
        #expect(refused.header("Content-Type") == "application/problem+json")
    }

    @Test(arguments: Mode.selected) func termination(_ mode: Mode) throws {
        let server = try TestServer(mode)
        let tus = Tus(client: server.v1)
        let location = try #require(try tus.create(length: 10).header("Location"))
        _ = try tus.patch(location, offset: 0, Array("abc".utf8))
        let deleted = try server.v1.send("DELETE", location, ["Tus-Resumable: 1.0.0"])
        #expect(deleted.status == 204)
        #expect(try tus.head(location).status == 404)
        #expect(try tus.patch(location, offset: 3, Array("d".utf8)).status == 404)
        #expect((try FileManager.default.contentsOfDirectory(atPath: server.dataDirectory + "/uploads")).isEmpty)
    }

    @Test(arguments: Mode.selected) func deferredLength(_ mode: Mode) throws {
        let server = try TestServer(mode)
        let tus = Tus(client: server.v1)
        let created = try tus.create(length: nil, metadata: ["key": "deferred"])
        #expect(created.status == 201)
        let location = try #require(created.header("Location"))
        #expect(try tus.head(location).header("Upload-Defer-Length") == "1")
        #expect(try tus.patch(location, offset: 0, Array("abc".utf8)).status == 204)
        #expect(try server.v1.get("/v1/blobs/deferred").status == 404)
        let last = try tus.patch(location, offset: 3, Array("def".utf8), extra: ["Upload-Length: 6"])
        #expect(last.status == 204)
        #expect(last.header("Upload-Length") == "6")
        #expect(try server.v1.get("/v1/blobs/deferred").text == "abcdef")
    }

    @Test(arguments: Mode.selected) func needsTheWriteScope(_ mode: Mode) throws {
        let server = try TestServer(mode, ServerSettings(tokens: "w write\nr read\n"))
        let tus = Tus(client: server.v1)
        #expect(try tus.create(length: 1).status == 401)
        #expect(try tus.create(length: 1, extra: ["Authorization: Bearer r"]).status == 403)
        #expect(try tus.create(length: 1, extra: ["Authorization: Bearer w"]).status == 201)
        #expect(try server.v1.send("OPTIONS", "/v1/uploads").status == 204, "discovery needs no token")
    }
}

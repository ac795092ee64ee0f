import Foundation
import LiveBlobd
import Testing

/// tus requests through curl.
struct Tus {
    let blobd: BlobdProcess

    func create(length: Int?, metadata: [String: String] = [:], extra: [String] = []) throws -> CurlResponse {
        let encoded = metadata.sorted { $0.key < $1.key }.map { "\($0.key) \(Data($0.value.utf8).base64EncodedString())" }
        var arguments = ["-X", "POST", "-H", "Tus-Resumable: 1.0.0"]
        arguments += length.map { ["-H", "Upload-Length: \($0)"] } ?? ["-H", "Upload-Defer-Length: 1"]
        if !encoded.isEmpty { arguments += ["-H", "Upload-Metadata: \(encoded.joined(separator: ","))"] }
        return try curl(arguments + extra + [blobd.baseURL + "/v1/uploads"])
    }

    func patch(_ location: String, offset: Int, _ bytes: [UInt8], extra: [String] = []) throws -> CurlResponse {
        let dir = TempDir()
        return try curl(["-X", "PATCH", "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Offset: \(offset)",
                         "-H", "Content-Type: application/offset+octet-stream", "--data-binary", "@" + dir.file("chunk", bytes)]
                        + extra + [blobd.baseURL + location])
    }

    func head(_ location: String) throws -> CurlResponse {
        try curl(["-I", "-H", "Tus-Resumable: 1.0.0", blobd.baseURL + location])
    }
}

@Suite struct TusTests {
    @Test func discovery() throws {
        let blobd = try BlobdProcess(["--max-blob-size", "1000000"])
        let options = try curl(["-X", "OPTIONS", blobd.baseURL + "/v1/uploads"])
        #expect(options.status == 204)
        #expect(options.header("Tus-Version") == "1.0.0")
        #expect(options.header("Tus-Resumable") == "1.0.0")
        #expect(options.header("Tus-Max-Size") == "1000000")
        #expect(options.header("Tus-Checksum-Algorithm") == "sha1,sha256")
        let extensions = Set((options.header("Tus-Extension") ?? "").split(separator: ",").map(String.init))
        #expect(extensions == ["creation", "creation-with-upload", "creation-defer-length", "termination", "checksum", "expiration"])
        let tooLarge = try Tus(blobd: blobd).create(length: 1_000_001)
        #expect(tooLarge.status == 413)
        #expect(tooLarge.header("Tus-Resumable") == "1.0.0")
    }

    @Test func creationAndSeveralPatches() throws {
        let blobd = try BlobdProcess()
        let tus = Tus(blobd: blobd)
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
                #expect(try curl([blobd.baseURL + "/v1/blobs/tus/movie.bin"]).status == 404, "not visible before the last byte")
            }
        }
        let blob = try curl([blobd.baseURL + "/v1/blobs/tus/movie.bin"])
        #expect(blob.status == 200)
        #expect(blob.body == bytes)
        #expect(blob.header("Content-Type") == "video/mp4")
        // A completed upload still answers HEAD.
        let done = try tus.head(location)
        #expect(done.status == 200)
        #expect(done.header("Upload-Offset") == "3000000")
        #expect(done.header("Content-Location") == "/v1/blobs/tus/movie.bin")
    }

    @Test func contentAddressedAndCreationWithUpload() throws {
        let blobd = try BlobdProcess()
        let tus = Tus(blobd: blobd)
        let dir = TempDir()
        let created = try tus.create(length: 6, extra: ["-H", "Content-Type: application/offset+octet-stream",
                                                        "--data-binary", "@" + dir.file("b", Array("hello\n".utf8))])
        #expect(created.status == 201)
        #expect(created.header("Upload-Offset") == "6")
        let key = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
        #expect(created.header("Content-Location") == "/v1/blobs/" + key)
        #expect(try curl([blobd.baseURL + "/v1/blobs/" + key]).text == "hello\n")
        // An empty upload is complete at creation.
        let empty = try tus.create(length: 0, metadata: ["key": "empty", "content-type": "text/plain"])
        #expect(empty.status == 201)
        let emptyBlob = try curl([blobd.baseURL + "/v1/blobs/empty"])
        #expect(emptyBlob.status == 200)
        #expect(emptyBlob.body.isEmpty)
        #expect(emptyBlob.header("Content-Type") == "text/plain")
    }

    @Test func protocolErrors() throws {
        let blobd = try BlobdProcess()
        let tus = Tus(blobd: blobd)
        let location = try #require(try tus.create(length: 10).header("Location"))
        // Wrong offset: 409, and nothing changes.
        let wrong = try tus.patch(location, offset: 5, Array("abcde".utf8))
        #expect(wrong.status == 409)
        #expect(wrong.header("Content-Type") == "application/problem+json")
        #expect(try tus.head(location).header("Upload-Offset") == "0")
        // Wrong content type: 415.
        let dir = TempDir()
        let plain = try curl(["-X", "PATCH", "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Offset: 0", "-H", "Content-Type: text/plain",
                              "--data-binary", "@" + dir.file("c", [1, 2]), blobd.baseURL + location])
        #expect(plain.status == 415)
        // Missing or unsupported Tus-Resumable: 412 with Tus-Version.
        for version in [[], ["-H", "Tus-Resumable: 0.2.2"]] {
            let response = try curl(["-I"] + version + [blobd.baseURL + location])
            #expect(response.status == 412)
            #expect(response.header("Tus-Version") == "1.0.0")
        }
        // More bytes than Upload-Length: 413, offset unchanged.
        #expect(try tus.patch(location, offset: 0, testBytes(11)).status == 413)
        #expect(try tus.head(location).header("Upload-Offset") == "0")
        // Bad creation requests.
        #expect(try curl(["-X", "POST", "-H", "Tus-Resumable: 1.0.0", blobd.baseURL + "/v1/uploads"]).status == 400)
        #expect(try tus.create(length: 5, metadata: ["key": "a/../b"]).status == 400)
        #expect(try curl(["-X", "POST", "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Length: 5", "-H", "Upload-Metadata: key !!!",
                          blobd.baseURL + "/v1/uploads"]).status == 400)
        #expect(try tus.head("/v1/uploads/00000000000000000000000000000000").status == 404)
        #expect(try tus.head("/v1/uploads/not-an-id").status == 404)
    }

    @Test func checksums() throws {
        let blobd = try BlobdProcess()
        let tus = Tus(blobd: blobd)
        let location = try #require(try tus.create(length: 10, metadata: ["key": "checked"]).header("Location"))
        let first = Array("hello".utf8)
        // sha1("hello") and sha256("hello").
        let sha1 = "qvTGHdzF6KLavt4PO0gs2a6pQ00="
        let sha256 = "LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ="
        let mismatch = try tus.patch(location, offset: 0, first, extra: ["-H", "Upload-Checksum: sha1 \(sha256)"])
        #expect(mismatch.status == 400, "a sha1 digest must be 20 bytes")
        let bad = try tus.patch(location, offset: 0, Array("HELLO".utf8), extra: ["-H", "Upload-Checksum: sha1 \(sha1)"])
        #expect(bad.status == 460)
        #expect(try tus.head(location).header("Upload-Offset") == "0", "the chunk was discarded")
        #expect(try tus.patch(location, offset: 0, first, extra: ["-H", "Upload-Checksum: sha1 \(sha1)"]).status == 204)
        #expect(try tus.patch(location, offset: 5, first, extra: ["-H", "Upload-Checksum: md5 XUFAKrxLKna5cZ2REBfFkg=="]).status == 400)
        #expect(try tus.patch(location, offset: 5, first, extra: ["-H", "Upload-Checksum: sha256 \(sha256)"]).status == 204)
        #expect(try curl([blobd.baseURL + "/v1/blobs/checked"]).text == "hellohello")
    }

    @Test func termination() throws {
        let blobd = try BlobdProcess()
        let tus = Tus(blobd: blobd)
        let location = try #require(try tus.create(length: 10).header("Location"))
        _ = try tus.patch(location, offset: 0, Array("abc".utf8))
        let deleted = try curl(["-X", "DELETE", "-H", "Tus-Resumable: 1.0.0", blobd.baseURL + location])
        #expect(deleted.status == 204)
        #expect(try tus.head(location).status == 404)
        #expect(try tus.patch(location, offset: 3, Array("d".utf8)).status == 404)
        #expect((try FileManager.default.contentsOfDirectory(atPath: blobd.dataDir + "/uploads")).isEmpty)
    }

    @Test func expiry() throws {
        let blobd = try BlobdProcess(["--upload-expiry", "1"])
        let tus = Tus(blobd: blobd)
        let created = try tus.create(length: 10)
        let location = try #require(created.header("Location"))
        #expect(eventually(within: 15) { [404, 410].contains((try? tus.head(location).status) ?? 0) })
        #expect(eventually(within: 15) { (try? FileManager.default.contentsOfDirectory(atPath: blobd.dataDir + "/uploads"))?.isEmpty == true },
                "the sweeper removes the data file")
        #expect([404, 410].contains(try tus.patch(location, offset: 0, [1]).status))
    }

    @Test func deferredLength() throws {
        let blobd = try BlobdProcess()
        let tus = Tus(blobd: blobd)
        let created = try tus.create(length: nil, metadata: ["key": "deferred"])
        #expect(created.status == 201)
        let location = try #require(created.header("Location"))
        #expect(try tus.head(location).header("Upload-Defer-Length") == "1")
        #expect(try tus.patch(location, offset: 0, Array("abc".utf8)).status == 204)
        #expect(try curl([blobd.baseURL + "/v1/blobs/deferred"]).status == 404)
        let last = try tus.patch(location, offset: 3, Array("def".utf8), extra: ["-H", "Upload-Length: 6"])
        #expect(last.status == 204)
        #expect(last.header("Upload-Length") == "6")
        #expect(try curl([blobd.baseURL + "/v1/blobs/deferred"]).text == "abcdef")
    }

    @Test func resumeAfterClientHangsUpMidPatch() throws {
        let blobd = try BlobdProcess()
        let tus = Tus(blobd: blobd)
        let bytes = testBytes(2_000_000, seed: 31)
        let location = try #require(try tus.create(length: bytes.count, metadata: ["key": "resumed"]).header("Location"))
        let connection = try RawConnection(port: blobd.port)
        let head = "PATCH \(location) HTTP/1.1\r\nHost: x\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: 0\r\n"
            + "Content-Type: application/offset+octet-stream\r\nContent-Length: \(bytes.count)\r\n\r\n"
        connection.send(Array(head.utf8) + Array(bytes[..<700_000]))
        #expect(eventually { (try? sample(curl([blobd.baseURL + "/metrics"]).text, "blobd_uploads_in_flight")) == 1 })
        connection.hangUp()
        #expect(eventually { (try? tus.head(location).header("Upload-Offset")) == "700000" }, "the bytes that arrived are kept")
        #expect(try tus.patch(location, offset: 700_000, Array(bytes[700_000...])).status == 204)
        #expect(try curl([blobd.baseURL + "/v1/blobs/resumed"]).body == bytes)
    }

    @Test func resumeAfterKillAndRestart() throws {
        let dir = TempDir()
        let dataDir = dir.path + "/data"
        let bytes = testBytes(1_500_000, seed: 41)
        var blobd = try BlobdProcess(dataDir: dataDir)
        var tus = Tus(blobd: blobd)
        let location = try #require(try tus.create(length: bytes.count, metadata: ["key": "survivor"]).header("Location"))
        #expect(try tus.patch(location, offset: 0, Array(bytes[..<600_000])).status == 204)
        // Half of a second PATCH, then kill -9 while it is in flight.
        let connection = try RawConnection(port: blobd.port)
        let head = "PATCH \(location) HTTP/1.1\r\nHost: x\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: 600000\r\n"
            + "Content-Type: application/offset+octet-stream\r\nContent-Length: 900000\r\n\r\n"
        connection.send(Array(head.utf8) + Array(bytes[600_000..<900_000]))
        #expect(eventually { (try? sample(curl([blobd.baseURL + "/metrics"]).text, "blobd_uploads_in_flight")) == 1 })
        #expect(blobd.stop(signal: SIGKILL) != nil)
        connection.hangUp()

        blobd = try BlobdProcess(dataDir: dataDir)
        tus = Tus(blobd: blobd)
        let offsetText = try #require(try tus.head(location).header("Upload-Offset"))
        let offset = try #require(Int(offsetText))
        #expect(offset == 600_000, "only bytes saved by a finished request count after a crash")
        #expect(try tus.patch(location, offset: offset, Array(bytes[offset...])).status == 204)
        #expect(try curl([blobd.baseURL + "/v1/blobs/survivor"]).body == bytes)
    }

    @Test func needsTheWriteScope() throws {
        let dir = TempDir()
        let tokens = dir.file("tokens", Array("w write\nr read\n".utf8))
        chmod(tokens, 0o600)
        let blobd = try BlobdProcess(["--tokens-file", tokens])
        let tus = Tus(blobd: blobd)
        #expect(try tus.create(length: 1).status == 401)
        #expect(try tus.create(length: 1, extra: ["-H", "Authorization: Bearer r"]).status == 403)
        #expect(try tus.create(length: 1, extra: ["-H", "Authorization: Bearer w"]).status == 201)
        #expect(try curl(["-X", "OPTIONS", blobd.baseURL + "/v1/uploads"]).status == 204, "discovery needs no token")
    }

    @Test func tuspyClientUpload() throws {
        let blobd = try BlobdProcess()
        let dir = TempDir()
        let bytes = testBytes(5 * 1024 * 1024 + 123, seed: 51)
        let file = dir.file("upload.bin", bytes)
        let script = """
            import sys
            from tusclient import client
            c = client.TusClient(sys.argv[1] + "/v1/uploads")
            u = c.uploader(sys.argv[2], chunk_size=1024 * 1024, metadata={"key": "tuspy/upload.bin", "filetype": "application/x-test"})
            u.upload()
            print(u.url)
            """
        let result = try run("/usr/bin/env", ["python3", "-c", script, blobd.baseURL, file], timeout: 120)
        #expect(result.status == 0, "\(result.stderr)")
        let blob = try curl([blobd.baseURL + "/v1/blobs/tuspy/upload.bin"])
        #expect(blob.status == 200)
        #expect(blob.body == bytes)
        #expect(blob.header("Content-Type") == "application/x-test")
    }
}

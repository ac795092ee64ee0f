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

/// tus with a real client, expiry by the sweeper, and resuming after a hang-up or a restart;
/// the protocol's semantics are in HTTPSemanticsTests/TusTests, in process and live.
@Suite struct TusTests {
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

    /// The blob a tus upload finishes after a restart has the headers its Upload-Metadata gave
    /// (Content-Language included, which the index once had no column for).
    @Test func attributesSurviveRestart() throws {
        let dir = TempDir()
        let dataDir = dir.path + "/data"
        let bytes = testBytes(300_000, seed: 43)
        var blobd = try BlobdProcess(dataDir: dataDir)
        var tus = Tus(blobd: blobd)
        let metadata = ["key": "restarted/notes.txt", "filetype": "text/plain; charset=utf-8", "cache-control": "no-cache",
                        "content-disposition": "attachment", "content-language": "fr-CA"]
        let location = try #require(try tus.create(length: bytes.count, metadata: metadata).header("Location"))
        #expect(try tus.patch(location, offset: 0, Array(bytes[..<100_000])).status == 204)
        #expect(blobd.stop() == 0)

        blobd = try BlobdProcess(dataDir: dataDir)
        tus = Tus(blobd: blobd)
        #expect(try tus.head(location).header("Upload-Offset") == "100000")
        #expect(try tus.patch(location, offset: 100_000, Array(bytes[100_000...])).status == 204)
        let blob = try curl([blobd.baseURL + "/v1/blobs/restarted/notes.txt"])
        #expect(blob.status == 200)
        #expect(blob.body == bytes)
        #expect(blob.header("Content-Type") == "text/plain; charset=utf-8")
        #expect(blob.header("Cache-Control") == "no-cache")
        #expect(blob.header("Content-Disposition") == "attachment")
        #expect(blob.header("Content-Language") == "fr-CA")
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

import Foundation
import LiveBlobd
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite struct RoundTripTests {
    @Test(arguments: [0, 1, 10 * 1024 * 1024])
    func curlRoundTripIsByteExact(size: Int) throws {
        let blobd = try BlobdProcess()
        let dir = TempDir()
        let bytes = testBytes(size, seed: UInt64(size))
        let put = try curl(["-T", dir.file("in", bytes), "-H", "Content-Type: application/x-test", blobd.baseURL + "/v1/blobs/round/trip"])
        #expect(put.status == 201)
        #expect(put.header("Location") == "/v1/blobs/round/trip")
        #expect(put.json["size"] as? Int == size)
        #expect(put.json["key"] as? String == "round/trip")
        #expect(put.json["content_type"] as? String == "application/x-test")
        #expect(put.header("ETag") == put.json["etag"] as? String)

        let get = try curl([blobd.baseURL + "/v1/blobs/round/trip"])
        #expect(get.status == 200)
        #expect(get.body == bytes)
        #expect(get.header("Content-Length") == String(size))
        #expect(get.header("Content-Type") == "application/x-test")
        #expect(get.header("Accept-Ranges") == "bytes")
        #expect(get.header("ETag") == put.header("ETag"))
        #expect(get.header("Repr-Digest") == "sha-256=:\(sha256Base64(bytes)):")
        #expect(get.header("Last-Modified").flatMap(parseHTTPDate) != nil)

        let head = try curl(["-I", blobd.baseURL + "/v1/blobs/round/trip"])
        #expect(head.status == 200)
        #expect(head.header("Content-Length") == String(size))
        #expect(head.header("ETag") == put.header("ETag"))
    }

    @Test func chunkedUpload() throws {
        let blobd = try BlobdProcess()
        let bytes = testBytes(3 * 1024 * 1024 + 5, seed: 9)
        // `-T -` reads stdin and sends it chunked.
        let put = try curl(["-T", "-", "-H", "Transfer-Encoding: chunked", blobd.baseURL + "/v1/blobs/chunked"], stdin: bytes)
        #expect(put.status == 201)
        #expect(put.json["size"] as? Int == bytes.count)
        let get = try curl([blobd.baseURL + "/v1/blobs/chunked"])
        #expect(get.body == bytes)
    }

    @Test func replaceAnswers200AndServesTheNewVersion() throws {
        let blobd = try BlobdProcess()
        let url = blobd.baseURL + "/v1/blobs/k"
        let first = try curl(["-X", "PUT", "--data-binary", "one", url])
        let second = try curl(["-X", "PUT", "--data-binary", "second", url])
        #expect(first.status == 201)
        #expect(second.status == 200)
        #expect(first.header("ETag") != second.header("ETag"))
        #expect(try curl([url]).text == "second")
    }

    @Test func contentAddressedPost() throws {
        let blobd = try BlobdProcess()
        let post = try curl(["--data-binary", "hello\n", "-H", "Content-Type: text/plain", blobd.baseURL + "/v1/blobs"])
        let key = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
        #expect(post.status == 201)
        #expect(post.json["key"] as? String == key)
        #expect(post.json["sha256"] as? String == key)
        #expect(post.header("Location") == "/v1/blobs/" + key)
        let again = try curl(["--data-binary", "hello\n", blobd.baseURL + "/v1/blobs"])
        #expect(again.status == 200)
        #expect(again.header("ETag") == post.header("ETag"))
        #expect(try curl([blobd.baseURL + "/v1/blobs/" + key]).text == "hello\n")
    }

    @Test func deleteThenGone() throws {
        let blobd = try BlobdProcess()
        let url = blobd.baseURL + "/v1/blobs/doomed"
        _ = try curl(["-X", "PUT", "--data-binary", "x", url])
        let delete = try curl(["-X", "DELETE", url])
        #expect(delete.status == 204)
        #expect(delete.body.isEmpty)
        let get = try curl([url])
        #expect(get.status == 404)
        #expect(get.header("Content-Type") == "application/problem+json")
        #expect(try curl(["-X", "DELETE", url]).status == 404)
    }

    @Test func sizeLimitBeforeAndWhileStreaming() throws {
        let blobd = try BlobdProcess(["--max-blob-size", "1000"])
        let dir = TempDir()
        let url = blobd.baseURL + "/v1/blobs/big"
        let byLength = try curl(["-T", dir.file("big", testBytes(1001)), url])
        #expect(byLength.status == 413)
        #expect(byLength.json["status"] as? Int == 413)
        let chunked = try curl(["-T", "-", "-H", "Transfer-Encoding: chunked", url], stdin: testBytes(5000))
        #expect(chunked.status == 413)
        #expect(try curl([url]).status == 404)
        #expect(try curl(["-T", dir.file("ok", testBytes(1000)), url]).status == 201)
        // Nothing was left behind: one file, the blob that fits.
        #expect(files(under: blobd.dataDir + "/blobs").count == 1)
    }

    @Test func sizeLimitFromEnvironment() throws {
        let blobd = try BlobdProcess(environment: ["BLOBD_MAX_BLOB_SIZE": "10"])
        #expect(try curl(["-X", "PUT", "--data-binary", "01234567890", blobd.baseURL + "/v1/blobs/k"]).status == 413)
        #expect(try curl(["-X", "PUT", "--data-binary", "0123456789", blobd.baseURL + "/v1/blobs/k"]).status == 201)
    }

    @Test func urlSessionRoundTrip() async throws {
        let blobd = try BlobdProcess()
        let bytes = testBytes(1 << 20, seed: 42)
        var put = URLRequest(url: URL(string: blobd.baseURL + "/v1/blobs/session/blob%20one")!)
        put.httpMethod = "PUT"
        put.setValue("image/png", forHTTPHeaderField: "Content-Type")
        let (putBody, putResponse) = try await URLSession.shared.upload(for: put, from: Data(bytes))
        let putHTTP = try #require(putResponse as? HTTPURLResponse)
        #expect(putHTTP.statusCode == 201)
        let info = try #require(try JSONSerialization.jsonObject(with: putBody) as? [String: Any])
        #expect(info["key"] as? String == "session/blob one")
        #expect(info["sha256"] as? String == sha256Hex(bytes))

        let (data, response) = try await URLSession.shared.data(from: URL(string: blobd.baseURL + "/v1/blobs/session/blob%20one")!)
        let http = try #require(response as? HTTPURLResponse)
        #expect(http.statusCode == 200)
        #expect([UInt8](data) == bytes)
        #expect(http.value(forHTTPHeaderField: "Content-Type") == "image/png")
    }
}

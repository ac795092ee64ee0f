import Foundation
import LiveBlobd
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite struct ConditionalTests {
    @Test func conditionalGet() throws {
        let blobd = try BlobdProcess()
        let url = blobd.baseURL + "/v1/blobs/c"
        let put = try curl(["-X", "PUT", "--data-binary", "conditional", url])
        let etag = try #require(put.header("ETag"))
        let lastModified = try #require(try curl([url]).header("Last-Modified"))

        let notModified = try curl(["-H", "If-None-Match: \(etag)", url])
        #expect(notModified.status == 304)
        #expect(notModified.header("ETag") == etag)
        #expect(notModified.body.isEmpty)
        #expect(try curl(["-H", "If-None-Match: W/\(etag)", url]).status == 304)
        #expect(try curl(["-H", "If-None-Match: \"x\", \(etag)", url]).status == 304)
        #expect(try curl(["-H", "If-None-Match: *", url]).status == 304)
        #expect(try curl(["-H", "If-None-Match: \"other\"", url]).status == 200)

        let since = try curl(["-H", "If-Modified-Since: \(lastModified)", url])
        #expect(since.status == 304)
        #expect(since.header("ETag") == etag)
        #expect(try curl(["-H", "If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT", url]).status == 200)
        #expect(try curl(["-H", "If-Modified-Since: garbage", url]).status == 200)

        #expect(try curl(["-H", "If-Match: \(etag)", url]).status == 200)
        let failed = try curl(["-H", "If-Match: \"other\"", url])
        #expect(failed.status == 412)
        #expect(failed.header("Content-Type") == "application/problem+json")
        #expect(failed.json["status"] as? Int == 412)
        #expect(try curl(["-H", "If-Unmodified-Since: Sun, 06 Nov 1994 08:49:37 GMT", url]).status == 412)
        #expect(try curl(["-H", "If-Unmodified-Since: \(lastModified)", url]).status == 200)

        // RFC 9110 §13.2.2: If-Match is evaluated before If-None-Match.
        #expect(try curl(["-H", "If-Match: \"other\"", "-H", "If-None-Match: \(etag)", url]).status == 412)
        // If-None-Match takes precedence over If-Modified-Since.
        #expect(try curl(["-H", "If-None-Match: \"other\"", "-H", "If-Modified-Since: \(lastModified)", url]).status == 200)
        // HEAD follows the same rules.
        #expect(try curl(["-I", "-H", "If-None-Match: \(etag)", url]).status == 304)
        // A missing blob is 404 whatever the preconditions.
        #expect(try curl(["-H", "If-Match: \(etag)", blobd.baseURL + "/v1/blobs/missing"]).status == 404)
    }

    @Test func conditionalPut() throws {
        let blobd = try BlobdProcess()
        let url = blobd.baseURL + "/v1/blobs/p"
        #expect(try curl(["-X", "PUT", "--data-binary", "x", "-H", "If-Match: *", url]).status == 412, "If-Match on a missing blob")
        let created = try curl(["-X", "PUT", "--data-binary", "one", "-H", "If-None-Match: *", url])
        #expect(created.status == 201)
        let exists = try curl(["-X", "PUT", "--data-binary", "two", "-H", "If-None-Match: *", url])
        #expect(exists.status == 412)
        #expect(exists.json["status"] as? Int == 412)
        let etag = try #require(created.header("ETag"))
        #expect(try curl(["-X", "PUT", "--data-binary", "two", "-H", "If-Match: \"stale\"", url]).status == 412)
        let replaced = try curl(["-X", "PUT", "--data-binary", "two", "-H", "If-Match: \(etag)", url])
        #expect(replaced.status == 200)
        #expect(try curl(["-X", "PUT", "--data-binary", "three", "-H", "If-Match: \(etag)", url]).status == 412, "old ETag is stale")
        #expect(try curl([url]).text == "two")
        #expect(try curl(["-X", "DELETE", "-H", "If-Match: \(etag)", url]).status == 412)
        #expect(try curl(["-X", "DELETE", "-H", "If-Match: \(replaced.header("ETag") ?? "")", url]).status == 204)
    }

    @Test func urlSessionConditionalGet() async throws {
        let blobd = try BlobdProcess()
        let url = URL(string: blobd.baseURL + "/v1/blobs/u")!
        _ = try curl(["-X", "PUT", "--data-binary", "session", url.absoluteString])
        let session = URLSession(configuration: .ephemeral)
        let (_, first) = try await session.data(from: url)
        let etag = try #require((first as? HTTPURLResponse)?.value(forHTTPHeaderField: "ETag"))
        var request = URLRequest(url: url)
        request.setValue(etag, forHTTPHeaderField: "If-None-Match")
        request.cachePolicy = .reloadIgnoringLocalCacheData
        let (data, response) = try await session.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 304)
        #expect(data.isEmpty)
    }
}

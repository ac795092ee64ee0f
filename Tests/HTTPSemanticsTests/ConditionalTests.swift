import Foundation
import HTTPTesting
import Testing

/// Conditional requests (RFC 9110 §13) on GET, HEAD, PUT and DELETE.
@Suite struct ConditionalTests {
    @Test(arguments: Mode.selected) func conditionalGet(_ mode: Mode) throws {
        let server = try TestServer(mode)
        let v1 = server.v1, url = "/v1/blobs/c"
        let put = try v1.put(url, Array("conditional".utf8))
        let etag = try #require(put.header("ETag"))
        let lastModified = try #require(try v1.get(url).header("Last-Modified"))

        let notModified = try v1.get(url, ["If-None-Match: \(etag)"])
        #expect(notModified.status == 304)
        #expect(notModified.header("ETag") == etag)
        #expect(notModified.body.isEmpty)
        #expect(try v1.get(url, ["If-None-Match: W/\(etag)"]).status == 304)
        #expect(try v1.get(url, ["If-None-Match: \"x\", \(etag)"]).status == 304)
        #expect(try v1.get(url, ["If-None-Match: *"]).status == 304)
        #expect(try v1.get(url, ["If-None-Match: \"other\""]).status == 200)

        let since = try v1.get(url, ["If-Modified-Since: \(lastModified)"])
        #expect(since.status == 304)
        #expect(since.header("ETag") == etag)
        #expect(try v1.get(url, ["If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT"]).status == 200)
        #expect(try v1.get(url, ["If-Modified-Since: garbage"]).status == 200)

        #expect(try v1.get(url, ["If-Match: \(etag)"]).status == 200)
        let failed = try v1.get(url, ["If-Match: \"other\""])
        #expect(failed.status == 412)
        #expect(failed.header("Content-Type") == "application/problem+json")
        #expect(failed.json["status"] as? Int == 412)
        #expect(try v1.get(url, ["If-Unmodified-Since: Sun, 06 Nov 1994 08:49:37 GMT"]).status == 412)
        #expect(try v1.get(url, ["If-Unmodified-Since: \(lastModified)"]).status == 200)

        // RFC 9110 §13.2.2: If-Match is evaluated before If-None-Match.
        #expect(try v1.get(url, ["If-Match: \"other\"", "If-None-Match: \(etag)"]).status == 412)
        // If-None-Match takes precedence over If-Modified-Since.
        #expect(try v1.get(url, ["If-None-Match: \"other\"", "If-Modified-Since: \(lastModified)"]).status == 200)
        // HEAD follows the same rules.
        #expect(try v1.send("HEAD", url, ["If-None-Match: \(etag)"]).status == 304)
        // A missing blob is 404 whatever the preconditions.
        #expect(try v1.get("/v1/blobs/missing", ["If-Match: \(etag)"]).status == 404)
    }

    @Test(arguments: Mode.selected) func conditionalHead(_ mode: Mode) throws {
        let server = try TestServer(mode)
        let v1 = server.v1, url = "/v1/blobs/h"
        let etag = try #require(try v1.put(url, Array("head".utf8)).header("ETag"))
        let lastModified = try #require(try v1.send("HEAD", url).header("Last-Modified"))
        let failed = try v1.send("HEAD", url, ["If-Match: \"other\""])
        #expect(failed.status == 412)
        #expect(failed.body.isEmpty, "HEAD has no body, even for a problem")
        #expect(try v1.send("HEAD", url, ["If-Match: \(etag)"]).status == 200)
        #expect(try v1.send("HEAD", url, ["If-Modified-Since: \(lastModified)"]).status == 304)
        #expect(try v1.send("HEAD", url, ["If-Unmodified-Since: Sun, 06 Nov 1994 08:49:37 GMT"]).status == 412)
        let ok = try v1.send("HEAD", url)
        #expect(ok.header("Content-Length") == "4")
        #expect(ok.body.isEmpty)
    }

    @Test(arguments: Mode.selected) func conditionalPut(_ mode: Mode) throws {
        let server = try TestServer(mode)
        let v1 = server.v1, url = "/v1/blobs/p"
        #expect(try v1.put(url, Array("x".utf8), ["If-Match: *"]).status == 412, "If-Match on a missing blob")
        let created = try v1.put(url, Array("one".utf8), ["If-None-Match: *"])
        #expect(created.status == 201)
        let exists = try v1.put(url, Array("two".utf8), ["If-None-Match: *"])
        #expect(exists.status == 412)
        #expect(exists.json["status"] as? Int == 412)
        let etag = try #require(created.header("ETag"))
        #expect(try v1.put(url, Array("two".utf8), ["If-Match: \"stale\""]).status == 412)
        let replaced = try v1.put(url, Array("two".utf8), ["If-Match: \(etag)"])
        #expect(replaced.status == 200)
        #expect(try v1.put(url, Array("three".utf8), ["If-Match: \(etag)"]).status == 412, "old ETag is stale")
        #expect(try v1.get(url).text == "two")
        #expect(try v1.send("DELETE", url, ["If-Match: \(etag)"]).status == 412)
        #expect(try v1.send("DELETE", url, ["If-Match: \(replaced.header("ETag") ?? "")"]).status == 204)
    }

    @Test(arguments: Mode.selected) func unmodifiedSinceOnWrites(_ mode: Mode) throws {
        let server = try TestServer(mode)
        let v1 = server.v1, url = "/v1/blobs/u"
        try v1.put(url, Array("one".utf8))
        let lastModified = try #require(try v1.get(url).header("Last-Modified"))
        let old = "If-Unmodified-Since: Sun, 06 Nov 1994 08:49:37 GMT"
        #expect(try v1.put(url, Array("two".utf8), [old]).status == 412)
        #expect(try v1.send("DELETE", url, [old]).status == 412)
        #expect(try v1.get(url).text == "one", "neither write happened")
        #expect(try v1.put(url, Array("two".utf8), ["If-Unmodified-Since: \(lastModified)"]).status == 200)
        #expect(try v1.send("DELETE", url, ["If-None-Match: *"]).status == 412)
        #expect(try v1.send("DELETE", url, ["If-Match: *"]).status == 204)
        #expect(try v1.send("DELETE", url, ["If-Match: *"]).status == 404, "nothing left to match")
    }
}

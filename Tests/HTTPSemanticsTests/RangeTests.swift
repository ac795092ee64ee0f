import Foundation
import HTTPTesting
import LiveBlobd
import Testing

@Suite struct RangeTests {
    static let size = 10_000
    let bytes = testBytes(RangeTests.size, seed: 7)

    /// A server holding the blob `ranged` (typed `text/x-ranged`), and its ETag.
    struct Ranged {
        let server: TestServer
        let etag: String

        init(_ mode: Mode, _ bytes: [UInt8]) throws {
            server = try TestServer(mode)
            etag = try server.v1.put("/v1/blobs/ranged", bytes, ["Content-Type: text/x-ranged"]).header("ETag") ?? ""
        }

        func get(_ headers: [String]) throws -> TestResponse {
            try server.v1.get("/v1/blobs/ranged", headers)
        }
    }

    @Test(arguments: Mode.selected) func singleRanges(_ mode: Mode) throws {
        let blob = try Ranged(mode, bytes)
        let cases: [(String, Int, Int)] = [("bytes=0-99", 0, 99), ("bytes=9990-", 9990, 9999), ("bytes=-10", 9990, 9999),
                                           ("bytes=5000-5000", 5000, 5000), ("bytes=9000-20000", 9000, 9999),
                                           ("bytes=0-99999999999999999999999", 0, 9999), ("bytes=-20000", 0, 9999)]
        for (range, start, end) in cases {
            let response = try blob.get(["Range: \(range)"])
            #expect(response.status == 206, "\(range)")
            #expect(response.header("Content-Range") == "bytes \(start)-\(end)/10000", "\(range)")
            #expect(response.header("Content-Length") == String(end - start + 1))
            #expect(response.header("Content-Type") == "text/x-ranged")
            #expect(response.header("ETag") == blob.etag)
            #expect(response.body == Array(bytes[start...end]), "\(range)")
        }
    }

    @Test(arguments: Mode.selected) func multipleRangesAsMultipart(_ mode: Mode) throws {
        let blob = try Ranged(mode, bytes)
        let response = try blob.get(["Range: bytes=0-9, 100-199, -5"])
        #expect(response.status == 206)
        let contentType = try #require(response.header("Content-Type"))
        #expect(contentType.hasPrefix("multipart/byteranges; boundary="))
        #expect(response.header("Content-Length") == String(response.body.count))
        let parts = try parseMultipart(response.body, contentType: contentType)
        #expect(parts == [
            BodyPart(contentRange: "bytes 0-9/10000", contentType: "text/x-ranged", bytes: Array(bytes[0...9])),
            BodyPart(contentRange: "bytes 100-199/10000", contentType: "text/x-ranged", bytes: Array(bytes[100...199])),
            BodyPart(contentRange: "bytes 9995-9999/10000", contentType: "text/x-ranged", bytes: Array(bytes[9995...9999])),
        ])
    }

    @Test(arguments: Mode.selected) func overlappingAndAdjacentRangesCoalesce(_ mode: Mode) throws {
        let blob = try Ranged(mode, bytes)
        let adjacent = try blob.get(["Range: bytes=0-9,10-19"])
        #expect(adjacent.status == 206)
        #expect(adjacent.header("Content-Range") == "bytes 0-19/10000", "a single range is never multipart")
        #expect(adjacent.body == Array(bytes[0...19]))
        let overlapping = try blob.get(["Range: bytes=50-80,0-10,5-60"])
        #expect(overlapping.header("Content-Range") == "bytes 0-80/10000")
        #expect(overlapping.body == Array(bytes[0...80]))
    }

    @Test(arguments: Mode.selected) func neverAmplified(_ mode: Mode) throws {
        let blob = try Ranged(mode, bytes)
        let sixtyFive = (0..<65).map { "\($0 * 10)-\($0 * 10 + 1)" }.joined(separator: ",")
        let many = try blob.get(["Range: bytes=\(sixtyFive)"])
        #expect(many.status == 200)
        #expect(many.body == bytes)
        let sixtyFour = (0..<64).map { "\($0 * 10)-\($0 * 10 + 1)" }.joined(separator: ",")
        let allowed = try blob.get(["Range: bytes=\(sixtyFour)"])
        #expect(allowed.status == 206)
        #expect(try parseMultipart(allowed.body, contentType: allowed.header("Content-Type") ?? "").count == 64)
        let repeated = try blob.get(["Range: bytes=0-,0-,0-"])
        #expect(repeated.status == 200)
        #expect(repeated.body == bytes)
        // Thousands of tiny overlapping ranges collapse into one.
        let tiny = (0..<2000).map { "\($0)-\($0 + 1)" }.joined(separator: ",")
        let collapsed = try blob.get(["Range: bytes=\(tiny)"])
        #expect(collapsed.status == 206)
        #expect(collapsed.header("Content-Range") == "bytes 0-2000/10000")
    }

    @Test(arguments: Mode.selected) func unsatisfiable(_ mode: Mode) throws {
        let blob = try Ranged(mode, bytes)
        for range in ["bytes=10000-", "bytes=20000-30000", "bytes=-0", "bytes=99999999999999999999-"] {
            let response = try blob.get(["Range: \(range)"])
            #expect(response.status == 416, "\(range)")
            #expect(response.header("Content-Range") == "bytes */10000")
            #expect(response.header("Content-Type") == "application/problem+json")
            #expect(response.json["status"] as? Int == 416)
        }
        // Satisfiable members win over unsatisfiable ones.
        let mixed = try blob.get(["Range: bytes=20000-,0-4"])
        #expect(mixed.status == 206)
        #expect(mixed.body == Array(bytes[0...4]))
    }

    @Test(arguments: Mode.selected) func malformedRangeIsIgnored(_ mode: Mode) throws {
        let blob = try Ranged(mode, bytes)
        for range in ["bytes=abc", "bytes=5-1", "lines=0-5", "bytes", "bytes=0-1;x"] {
            let response = try blob.get(["Range: \(range)"])
            #expect(response.status == 200, "\(range)")
            #expect(response.body == bytes)
        }
    }

    @Test(arguments: Mode.selected) func ifRange(_ mode: Mode) throws {
        let blob = try Ranged(mode, bytes)
        let lastModified = try #require(try blob.get([]).header("Last-Modified"))
        let match = try blob.get(["Range: bytes=0-3", "If-Range: \(blob.etag)"])
        #expect(match.status == 206)
        #expect(match.body == Array(bytes[0...3]))
        let mismatch = try blob.get(["Range: bytes=0-3", "If-Range: \"other\""])
        #expect(mismatch.status == 200)
        #expect(mismatch.body == bytes)
        let weak = try blob.get(["Range: bytes=0-3", "If-Range: W/\(blob.etag)"])
        #expect(weak.status == 200, "If-Range needs a strong match")
        let date = try blob.get(["Range: bytes=0-3", "If-Range: \(lastModified)"])
        #expect(date.status == 206)
        let oldDate = try blob.get(["Range: bytes=0-3", "If-Range: Sun, 06 Nov 1994 08:49:37 GMT"])
        #expect(oldDate.status == 200)
        let invalidDate = try blob.get(["Range: bytes=0-3", "If-Range: not a date"])
        #expect(invalidDate.status == 200)
    }

    @Test(arguments: Mode.selected) func emptyBlob(_ mode: Mode) throws {
        let blob = try Ranged(mode, bytes)
        try blob.server.v1.put("/v1/blobs/empty", [])
        let zero = try blob.server.v1.get("/v1/blobs/empty", ["Range: bytes=0-0"])
        #expect(zero.status == 416)
        #expect(zero.header("Content-Range") == "bytes */0")
        let suffix = try blob.server.v1.get("/v1/blobs/empty", ["Range: bytes=-5"])
        #expect(suffix.status == 200)
        #expect(suffix.body.isEmpty)
    }
}

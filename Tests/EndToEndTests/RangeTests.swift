import Foundation
import Testing

/// One part of a multipart/byteranges body.
struct BodyPart: Equatable {
    let contentRange: String
    let contentType: String
    let bytes: [UInt8]
}

/// Parses a multipart/byteranges body independently of blobd (RFC 2046 framing).
func parseMultipart(_ body: [UInt8], contentType: String) throws -> [BodyPart] {
    guard let range = contentType.range(of: "boundary=") else { throw TestFailure("no boundary in \(contentType)") }
    let boundary = Array(("--" + contentType[range.upperBound...].trimmingCharacters(in: CharacterSet(charactersIn: "\""))).utf8)
    var parts: [BodyPart] = []
    var index = 0
    func find(_ needle: [UInt8], from start: Int) -> Int? {
        guard needle.count <= body.count else { return nil }
        var i = start
        while i + needle.count <= body.count {
            if body[i] == needle[0] && Array(body[i..<i + needle.count]) == needle { return i }
            i += 1
        }
        return nil
    }
    guard let first = find(boundary, from: 0) else { throw TestFailure("no first boundary") }
    index = first + boundary.count
    while true {
        if body[index..<min(index + 2, body.count)].elementsEqual("--".utf8) { break }  // close delimiter
        guard body[index..<index + 2].elementsEqual("\r\n".utf8) else { throw TestFailure("bad delimiter line") }
        index += 2
        guard let headerEnd = find(Array("\r\n\r\n".utf8), from: index) else { throw TestFailure("no part headers") }
        let headerText = String(decoding: body[index..<headerEnd], as: UTF8.self)
        var headers: [String: String] = [:]
        for line in headerText.components(separatedBy: "\r\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let contentStart = headerEnd + 4
        guard let next = find(Array("\r\n".utf8) + boundary, from: contentStart) else { throw TestFailure("no next boundary") }
        parts.append(BodyPart(contentRange: headers["content-range"] ?? "", contentType: headers["content-type"] ?? "",
                              bytes: Array(body[contentStart..<next])))
        index = next + 2 + boundary.count
    }
    return parts
}

@Suite struct RangeEndToEndTests {
    static let size = 10_000
    let blobd: BlobdProcess
    let bytes = testBytes(RangeEndToEndTests.size, seed: 7)
    let url: String
    let etag: String

    init() throws {
        blobd = try BlobdProcess()
        url = blobd.baseURL + "/v1/blobs/ranged"
        let dir = TempDir()
        let put = try curl(["-T", dir.file("b", bytes), "-H", "Content-Type: text/x-ranged", url])
        etag = put.header("ETag") ?? ""
    }

    func get(_ headers: [String]) throws -> CurlResponse {
        try curl(headers.flatMap { ["-H", $0] } + [url])
    }

    @Test func singleRanges() throws {
        let cases: [(String, Int, Int)] = [("bytes=0-99", 0, 99), ("bytes=9990-", 9990, 9999), ("bytes=-10", 9990, 9999),
                                           ("bytes=5000-5000", 5000, 5000), ("bytes=9000-20000", 9000, 9999),
                                           ("bytes=0-99999999999999999999999", 0, 9999), ("bytes=-20000", 0, 9999)]
        for (range, start, end) in cases {
            let response = try get(["Range: \(range)"])
            #expect(response.status == 206, "\(range)")
            #expect(response.header("Content-Range") == "bytes \(start)-\(end)/10000", "\(range)")
            #expect(response.header("Content-Length") == String(end - start + 1))
            #expect(response.header("Content-Type") == "text/x-ranged")
            #expect(response.header("ETag") == etag)
            #expect(response.body == Array(bytes[start...end]), "\(range)")
        }
    }

    @Test func multipleRangesAsMultipart() throws {
        let response = try get(["Range: bytes=0-9, 100-199, -5"])
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

    @Test func overlappingAndAdjacentRangesCoalesce() throws {
        let adjacent = try get(["Range: bytes=0-9,10-19"])
        #expect(adjacent.status == 206)
        #expect(adjacent.header("Content-Range") == "bytes 0-19/10000", "a single range is never multipart")
        #expect(adjacent.body == Array(bytes[0...19]))
        let overlapping = try get(["Range: bytes=50-80,0-10,5-60"])
        #expect(overlapping.header("Content-Range") == "bytes 0-80/10000")
        #expect(overlapping.body == Array(bytes[0...80]))
    }

    @Test func neverAmplified() throws {
        let sixtyFive = (0..<65).map { "\($0 * 10)-\($0 * 10 + 1)" }.joined(separator: ",")
        let many = try get(["Range: bytes=\(sixtyFive)"])
        #expect(many.status == 200)
        #expect(many.body == bytes)
        let sixtyFour = (0..<64).map { "\($0 * 10)-\($0 * 10 + 1)" }.joined(separator: ",")
        let allowed = try get(["Range: bytes=\(sixtyFour)"])
        #expect(allowed.status == 206)
        #expect(try parseMultipart(allowed.body, contentType: allowed.header("Content-Type") ?? "").count == 64)
        let repeated = try get(["Range: bytes=0-,0-,0-"])
        #expect(repeated.status == 200)
        #expect(repeated.body == bytes)
        // Thousands of tiny overlapping ranges collapse into one.
        let tiny = (0..<2000).map { "\($0)-\($0 + 1)" }.joined(separator: ",")
        let collapsed = try get(["Range: bytes=\(tiny)"])
        #expect(collapsed.status == 206)
        #expect(collapsed.header("Content-Range") == "bytes 0-2000/10000")
    }

    @Test func unsatisfiable() throws {
        for range in ["bytes=10000-", "bytes=20000-30000", "bytes=-0", "bytes=99999999999999999999-"] {
            let response = try get(["Range: \(range)"])
            #expect(response.status == 416, "\(range)")
            #expect(response.header("Content-Range") == "bytes */10000")
            #expect(response.header("Content-Type") == "application/problem+json")
            #expect(response.json["status"] as? Int == 416)
        }
        // Satisfiable members win over unsatisfiable ones.
        let mixed = try get(["Range: bytes=20000-,0-4"])
        #expect(mixed.status == 206)
        #expect(mixed.body == Array(bytes[0...4]))
    }

    @Test func malformedRangeIsIgnored() throws {
        for range in ["bytes=abc", "bytes=5-1", "lines=0-5", "bytes", "bytes=0-1;x"] {
            let response = try get(["Range: \(range)"])
            #expect(response.status == 200, "\(range)")
            #expect(response.body == bytes)
        }
    }

    @Test func ifRange() throws {
        let lastModified = try #require(try get([]).header("Last-Modified"))
        let match = try get(["Range: bytes=0-3", "If-Range: \(etag)"])
        #expect(match.status == 206)
        #expect(match.body == Array(bytes[0...3]))
        let mismatch = try get(["Range: bytes=0-3", "If-Range: \"other\""])
        #expect(mismatch.status == 200)
        #expect(mismatch.body == bytes)
        let weak = try get(["Range: bytes=0-3", "If-Range: W/\(etag)"])
        #expect(weak.status == 200, "If-Range needs a strong match")
        let date = try get(["Range: bytes=0-3", "If-Range: \(lastModified)"])
        #expect(date.status == 206)
        let oldDate = try get(["Range: bytes=0-3", "If-Range: Sun, 06 Nov 1994 08:49:37 GMT"])
        #expect(oldDate.status == 200)
        let invalidDate = try get(["Range: bytes=0-3", "If-Range: not a date"])
        #expect(invalidDate.status == 200)
    }

    @Test func emptyBlob() throws {
        _ = try curl(["-X", "PUT", "--data-binary", "", blobd.baseURL + "/v1/blobs/empty"])
        let url = blobd.baseURL + "/v1/blobs/empty"
        let zero = try curl(["-H", "Range: bytes=0-0", url])
        #expect(zero.status == 416)
        #expect(zero.header("Content-Range") == "bytes */0")
        let suffix = try curl(["-H", "Range: bytes=-5", url])
        #expect(suffix.status == 200)
        #expect(suffix.body.isEmpty)
    }

    @Test func resumeWithCurlContinueAt() throws {
        let dir = TempDir()
        let partial = dir.file("partial", Array(bytes[0..<4000]))
        let result = try run("/usr/bin/curl", ["-sS", "-C", "-", "-o", partial, url])
        #expect(result.status == 0)
        #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: partial))) == bytes)
    }
}

import BucketSettings
import HTTPCore
import Testing
@testable import BlobS3

/// The streaming `multipart/form-data` reader of POST Object, cut at every byte, and the CORS
/// rules' matching and limits.
@Suite struct FormAndCORSTests {
    static let body = Array(("preamble\r\n--XyZ\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nup/${filename}\r\n"
        + "--XyZ\r\nContent-Disposition: form-data; name=\"Policy\"\r\n\r\na\r\n--XyZb\r\n"
        + "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"dir\\\\a \\\"b\\\".txt\"\r\nContent-Type: text/plain\r\n\r\n"
        + "line\r\n--XyZnot a delimiter\r\n--Xy\r\n--XyZ\r\nContent-Disposition: form-data; name=\"after\"\r\n\r\nignored\r\n--XyZ--\r\n").utf8)

    struct Read: Equatable {
        var fields: [String] = []
        var filename = ""
        var file: [UInt8] = []
        var ended = false
    }

    static func read(_ body: [UInt8], cutAt cuts: [Int]) throws -> Read {
        var form = MultipartForm(boundary: "XyZ")
        var read = Read()
        var start = 0
        for end in cuts + [body.count] where end >= start {
            try body[start..<end].withUnsafeBytes { chunk in
                try form.feed(chunk) { event in
                    switch event {
                    case .field(let name, let value): read.fields.append(name + "=" + String(decoding: value, as: UTF8.self))
                    case .fileStart(let filename, _): read.filename = filename
                    case .fileBytes(let bytes): read.file += bytes
                    case .fileEnd: read.ended = true
                    }
                }
            }
            start = end
        }
        return read
    }

    @Test func everyCutGivesTheSameForm() throws {
        let expected = Read(fields: ["key=up/${filename}", "Policy=a\r\n--XyZb"], filename: "dir\\a \"b\".txt",
                            file: Array("line\r\n--XyZnot a delimiter\r\n--Xy".utf8), ended: true)
        #expect(try Self.read(Self.body, cutAt: []) == expected)
        for cut in 0...Self.body.count {
            #expect(try Self.read(Self.body, cutAt: [cut]) == expected, "cut at \(cut)")
        }
        #expect(try Self.read(Self.body, cutAt: Array(0...Self.body.count)) == expected, "one byte at a time")
    }

    @Test func boundsAndBoundaries() throws {
        #expect(MultipartForm.boundary(contentType: "multipart/form-data; boundary=\"a b\"") == "a b")
        #expect(MultipartForm.boundary(contentType: "Multipart/Form-Data;boundary=xyz") == "xyz")
        #expect(MultipartForm.boundary(contentType: "multipart/mixed; boundary=xyz") == nil)
        #expect(MultipartForm.boundary(contentType: "multipart/form-data") == nil)
        let big = Array("--XyZ\r\nContent-Disposition: form-data; name=\"k\"\r\n\r\n".utf8) + Array(repeating: 0x61, count: 21 * 1024)
        #expect(throws: MultipartForm.Malformed.self) { _ = try Self.read(big, cutAt: [100, 5000]) }
        var many: [UInt8] = []
        for index in 0...MultipartForm.maxFields { many += Array("--XyZ\r\nContent-Disposition: form-data; name=\"f\(index)\"\r\n\r\nv\r\n".utf8) }
        #expect(throws: MultipartForm.Malformed.self) { _ = try Self.read(many, cutAt: []) }
        let nameless = Array("--XyZ\r\nContent-Type: text/plain\r\n\r\nv\r\n--XyZ--".utf8)
        #expect(throws: MultipartForm.Malformed.self) { _ = try Self.read(nameless, cutAt: []) }
    }

    @Test func corsRules() throws {
        let rule = CORSRule(allowedOrigins: ["https://*.example.com", "http://a.test"], allowedMethods: ["GET", "PUT"],
                            allowedHeaders: ["X-Amz-*", "content-type"])
        let rules = try CORSConfiguration(rules: [rule, CORSRule(allowedOrigins: ["*"], allowedMethods: ["HEAD"])])
        #expect(rules.match(origin: "https://www.example.com", method: "PUT", headers: ["x-amz-date"])?.pattern == "https://*.example.com")
        #expect(rules.match(origin: "https://example.com", method: "GET", headers: []) == nil, "the * stands for at least the dot's prefix")
        #expect(rules.match(origin: "http://a.test", method: "GET", headers: ["content-type", "x-amz-meta-a"]) != nil)
        #expect(rules.match(origin: "http://a.test", method: "GET", headers: ["authorization"]) == nil)
        #expect(rules.match(origin: "http://a.test", method: "DELETE", headers: []) == nil)
        #expect(rules.match(origin: "http://b.test", method: "HEAD", headers: [])?.pattern == "*", "the second rule")
        #expect(throws: CORSConfiguration.Invalid.badMethod("PATCH")) {
            _ = try CORSConfiguration(rules: [CORSRule(allowedOrigins: ["*"], allowedMethods: ["PATCH"])])
        }
        #expect(throws: CORSConfiguration.Invalid.tooManyRules) {
            _ = try CORSConfiguration(rules: Array(repeating: rule, count: 101))
        }
        #expect(throws: CORSConfiguration.Invalid.badOrigin("http://*.*")) {
            _ = try CORSConfiguration(rules: [CORSRule(allowedOrigins: ["http://*.*"], allowedMethods: ["GET"])])
        }
        let text = rules.json.serialized()
        #expect(try CORSConfiguration(jsonText: Array(text.utf8)) == rules, "the canonical JSON reads back")
        #expect(try S3Service.corsConfiguration(xml: Array(S3Service.corsXML(rules).utf8)) == rules, "and so does the XML")
    }
}

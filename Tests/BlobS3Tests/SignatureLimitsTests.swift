import HTTPCore
import BlobStore
import MicroHTTPD
import Testing
@testable import BlobS3

/// What SigV4 refuses before any key is looked up or any canonical request is built, and what
/// the table of verified presigned URLs may hold.
@Suite struct SignatureLimitsTests {
    static func parse(_ signedHeaders: String) throws(S3Error) -> SigV4.Signed? {
        let head = HTTPRequestHead(method: "GET", target: Array("/b/k".utf8), headers: [
            ("Host", "h"), ("x-amz-date", "20130524T000000Z"), ("x-amz-content-sha256", "UNSIGNED-PAYLOAD"),
            ("Authorization", "AWS4-HMAC-SHA256 Credential=K/20130524/us-east-1/s3/aws4_request,SignedHeaders=\(signedHeaders),Signature=00"),
        ])
        return try SigV4.signed(head, query: [])
    }

    static func code(_ signedHeaders: String) -> S3Error.Code? {
        do {
            _ = try parse(signedHeaders)
            return nil
        } catch {
            return error.code
        }
    }

    /// SignedHeaders: each name once, sorted, none empty, at most 64 of them and 2 KB; names
    /// are compared lowercased.
    @Test func signedHeadersAreOneSortedListOfDistinctNames() throws {
        #expect(Self.code("host;x-amz-content-sha256;x-amz-date") == nil)
        #expect(try Self.parse("Host;X-Amz-Date")?.signedHeaders == ["host", "x-amz-date"])
        #expect(Self.code("host;" + Array(repeating: "a", count: 6000).joined(separator: ";")) == .authorizationHeaderMalformed)
        #expect(Self.code("a;a;host") == .authorizationHeaderMalformed)
        #expect(Self.code("host;a") == .authorizationHeaderMalformed)
        #expect(Self.code("a;;host") == .authorizationHeaderMalformed)
        #expect(Self.code("a;host;") == .authorizationHeaderMalformed)
        #expect(Self.code("a;Host;host") == .authorizationHeaderMalformed)
        let many = (0..<64).map { "h" + String(1000 + $0) }.joined(separator: ";")
        #expect(Self.code(many) == nil)
        #expect(Self.code(many + ";z") == .authorizationHeaderMalformed)
        #expect(Self.code(String(repeating: "a", count: 2049)) == .authorizationHeaderMalformed)
    }

    /// A signed header absent from the request, and an `x-amz-*` header present but not signed.
    @Test func signedAndPresentHeadersAgree() throws {
        let signed = SigV4.Signed(accessKey: "k", scopeDate: "20130524", region: "r", service: "s3",
                                  signedHeaders: ["host", "x-amz-date"], signature: "ff", amzDate: "20130524T000000Z",
                                  payloadHash: "UNSIGNED-PAYLOAD", expires: 60)
        let headers: [(name: String, value: String)] = [("Host", "h"), ("X-Amz-Date", "d")]
        #expect(SigV4.unsignedAmzHeader(headers, signed: signed) == nil)
        #expect(SigV4.absentSignedHeader(headers, signed: signed) == nil)
        #expect(SigV4.unsignedAmzHeader(headers + [("X-AMZ-Copy-Source", "b/k")], signed: signed) == "x-amz-copy-source")
        #expect(SigV4.unsignedAmzHeader(headers + [("x-amzfoo", "1"), ("Range", "bytes=0-1")], signed: signed) == nil)
        #expect(SigV4.absentSignedHeader([("Host", "h")], signed: signed) == "x-amz-date")
    }

    /// Each presigned-URL parameter once: a second X-Amz-Signature would be unsigned bytes.
    @Test func repeatedPresignParametersAreRefused() throws {
        let base = "/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=K%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
            + "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Signature=00"
        func code(_ target: String) -> S3Error.Code? {
            let head = HTTPRequestHead(method: "GET", target: Array(target.utf8), headers: [("Host", "h")])
            do {
                _ = try SigV4.signed(head, query: PercentEncodingQuery.decode(head.query ?? []))
                return nil
            } catch {
                return error.code
            }
        }
        #expect(code(base) == nil)
        #expect(code(base + "&X-Amz-Signature=" + String(repeating: "0", count: 30_000)) == .authorizationQueryParametersError)
        for name in ["X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-SignedHeaders"] {
            #expect(code(base + "&\(name)=x") == .authorizationQueryParametersError, "\(name) twice")
        }
    }

    /// Long presigned URLs fill the table by bytes before they fill it by count.
    @Test func verifiedURLsAreBoundedByBytes() throws {
        let table = VerifiedURLs(capacity: 4096, byteCapacity: 1 << 20)
        let signed = SigV4.Signed(accessKey: "k", scopeDate: "20130524", region: "r", service: "s3", signedHeaders: ["host"],
                                  signature: "ff", amzDate: "20130524T000000Z", payloadHash: "UNSIGNED-PAYLOAD", expires: 60)
        let padding = String(repeating: "p", count: 5000)
        var largest = 0
        for index in 0..<500 {
            let target = "/b/k?n=\(index)&pad=\(padding)"
            let head = HTTPRequestHead(method: "GET", target: Array(target.utf8), headers: [("Host", "h")])
            let key = try #require(VerifiedURLs.Key(head))
            table.insert(key, head: head, query: PercentEncodingQuery.decode(head.query ?? []), signed: signed, secret: "s", signedAt: 0)
            largest = max(largest, table.bytes)
        }
        #expect(largest <= 1 << 20)
        #expect(table.count > 0 && table.count < 500)
        // Short URLs are still bounded by count.
        let small = VerifiedURLs(capacity: 64, byteCapacity: 1 << 20)
        for index in 0..<1000 {
            let head = HTTPRequestHead(method: "GET", target: Array("/b/k?n=\(index)".utf8), headers: [("Host", "h")])
            let key = try #require(VerifiedURLs.Key(head))
            small.insert(key, head: head, query: PercentEncodingQuery.decode(head.query ?? []), signed: signed, secret: "s", signedAt: 0)
            #expect(small.count <= 64)
        }
    }
}

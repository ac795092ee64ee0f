import HTTPCore
import BlobStore
import MicroHTTPD
import Testing
@testable import BlobS3

/// SigV2 ("Signing and authenticating REST requests"): the examples of AWS's documentation,
/// signed with its example key, give the documented signatures.
@Suite struct SigV2Tests {
    static let secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

    /// The string to sign and the signature blobd computes for `head`, and the one it carries.
    static func verify(_ head: HTTPRequestHead) throws -> (stringToSign: String, expected: String, presented: String) {
        let query = PercentEncodingQuery.decode(head.query ?? [])
        let signed = try #require(try SigV2.signed(head, query: query))
        let stringToSign = SigV2.stringToSign(method: head.method, rawPath: head.path, query: query, headers: head.headers, signed: signed)
        return (String(decoding: stringToSign, as: UTF8.self), SigV2.signature(secret: secret, stringToSign: stringToSign), signed.signature)
    }

    @Test func objectGet() throws {
        let head = HTTPRequestHead(method: "GET", target: Array("/johnsmith/photos/puppy.jpg".utf8), headers: [
            ("Host", "s3.us-west-1.amazonaws.com"), ("Date", "Tue, 27 Mar 2007 19:36:42 +0000"),
            ("Authorization", "AWS AKIAIOSFODNN7EXAMPLE:bWq2s1WEIj+Ydj0vQ697zp+IXMU="),
        ])
        let result = try Self.verify(head)
        #expect(result.stringToSign == "GET\n\n\nTue, 27 Mar 2007 19:36:42 +0000\n/johnsmith/photos/puppy.jpg")
        #expect(result.expected == "bWq2s1WEIj+Ydj0vQ697zp+IXMU=")
        #expect(result.expected == result.presented)
    }

    @Test func objectPut() throws {
        let head = HTTPRequestHead(method: "PUT", target: Array("/johnsmith/photos/puppy.jpg".utf8), headers: [
            ("Content-Type", "image/jpeg"), ("Content-Length", "94328"), ("Host", "s3.us-west-1.amazonaws.com"),
            ("Date", "Tue, 27 Mar 2007 21:15:45 +0000"), ("Authorization", "AWS AKIAIOSFODNN7EXAMPLE:MyyxeRY7whkBe+bq8fHCL/2kKUg="),
        ])
        #expect(try Self.verify(head).expected == "MyyxeRY7whkBe+bq8fHCL/2kKUg=")
    }

    /// Content-MD5, Content-Type, and `x-amz-*` headers lowercased, sorted, a repeated one's
    /// values joined by a comma.
    @Test func uploadWithAmzHeaders() throws {
        let head = HTTPRequestHead(method: "PUT", target: Array("/static.johnsmith.net/db-backup.dat.gz".utf8), headers: [
            ("User-Agent", "curl/7.15.5"), ("Host", "static.johnsmith.net:8080"), ("Date", "Tue, 27 Mar 2007 21:06:08 +0000"),
            ("x-amz-acl", "public-read"), ("content-type", "application/x-download"), ("Content-MD5", "4gJE4saaMU4BqNR0kLY+lw=="),
            ("X-Amz-Meta-ReviewedBy", "joe@johnsmith.net"), ("X-Amz-Meta-ReviewedBy", "jane@johnsmith.net"),
            ("X-Amz-Meta-FileChecksum", "0x02661779"), ("X-Amz-Meta-ChecksumAlgorithm", "crc32"),
            ("Content-Disposition", "attachment; filename=database.dat"), ("Content-Encoding", "gzip"), ("Content-Length", "5913339"),
            ("Authorization", "AWS AKIAIOSFODNN7EXAMPLE:ilyl83RwaSoYIEdixDQcA4OnAnc="),
        ])
        let result = try Self.verify(head)
        #expect(result.stringToSign == "PUT\n4gJE4saaMU4BqNR0kLY+lw==\napplication/x-download\nTue, 27 Mar 2007 21:06:08 +0000\n"
            + "x-amz-acl:public-read\nx-amz-meta-checksumalgorithm:crc32\nx-amz-meta-filechecksum:0x02661779\n"
            + "x-amz-meta-reviewedby:joe@johnsmith.net,jane@johnsmith.net\n/static.johnsmith.net/db-backup.dat.gz")
        #expect(result.expected == "ilyl83RwaSoYIEdixDQcA4OnAnc=")
    }

    /// With x-amz-date, the Date line is empty and x-amz-date is among the amz headers.
    @Test func amzDateReplacesDate() throws {
        let head = HTTPRequestHead(method: "DELETE", target: Array("/johnsmith/photos/puppy.jpg".utf8), headers: [
            ("Date", "Tue, 27 Mar 2007 21:20:27 +0000"), ("x-amz-date", "Tue, 27 Mar 2007 21:20:26 +0000"),
            ("Authorization", "AWS AKIAIOSFODNN7EXAMPLE:R4dJ53KECjStyBO5iTBJZ4XVOaI="),
        ])
        let result = try Self.verify(head)
        #expect(result.stringToSign == "DELETE\n\n\n\nx-amz-date:Tue, 27 Mar 2007 21:20:26 +0000\n/johnsmith/photos/puppy.jpg")
        #expect(result.expected == result.presented)
        #expect(SigV2.requestTime(head) == 1_175_030_426)
    }

    /// A presigned URL signs Expires in Date's place; its own parameters are not in the
    /// resource, and the sub-resources are, sorted, with their decoded values.
    @Test func presignedURLs() throws {
        let plain = HTTPRequestHead(method: "GET", target: Array(
            "/johnsmith/photos/puppy.jpg?AWSAccessKeyId=AKIAIOSFODNN7EXAMPLE&Expires=1141889120&Signature=fScKGHCDI0NY5E7CYp9Vc8VKMbY%3D".utf8),
                                    headers: [("Host", "s3.amazonaws.com")])
        let result = try Self.verify(plain)
        #expect(result.stringToSign == "GET\n\n\n1141889120\n/johnsmith/photos/puppy.jpg")
        #expect(result.expected == "fScKGHCDI0NY5E7CYp9Vc8VKMbY=" && result.expected == result.presented)
        let subresources = HTTPRequestHead(method: "GET", target: Array(
            "/b/k?versionId=null&response-content-type=text%2Fplain&prefix=p&AWSAccessKeyId=A&Signature=x&Expires=5&acl&x-amz-meta-a=1".utf8),
                                           headers: [("Content-Type", "text/x")])
        #expect(try Self.verify(subresources).stringToSign
            == "GET\n\ntext/x\n5\nx-amz-meta-a:1\n/b/k?acl&response-content-type=text/plain&versionId=null")
    }

    @Test func malformedSignatures() throws {
        func error(_ target: String, _ headers: [(name: String, value: String)]) -> S3Error.Code? {
            let head = HTTPRequestHead(method: "GET", target: Array(target.utf8), headers: headers)
            do {
                _ = try SigV2.signed(head, query: PercentEncodingQuery.decode(head.query ?? []))
                return nil
            } catch {
                return error.code
            }
        }
        #expect(error("/b/k", [("Authorization", "AWS KEY")]) == .invalidArgument)
        #expect(error("/b/k", [("Authorization", "AWS KEY:")]) == .invalidArgument)
        #expect(error("/b/k?Signature=x", [("Authorization", "AWS KEY:c2ln")]) == .invalidArgument)
        #expect(error("/b/k?AWSAccessKeyId=K&Signature=x&Expires=1&Signature=y", []) == .invalidArgument)
        #expect(error("/b/k?AWSAccessKeyId=K&Signature=x", []) == .accessDenied)
        #expect(error("/b/k?AWSAccessKeyId=K&Signature=x&Expires=1&X-Amz-Algorithm=AWS4-HMAC-SHA256", []) == .invalidArgument)
        #expect(error("/b/k", [("Authorization", "AWS4-HMAC-SHA256 Credential=x")]) == nil)
    }

    /// RFC 2202's HMAC-SHA1 test cases 1, 2 and 6 (a key longer than a block).
    @Test func hmacSHA1MatchesRFC2202() throws {
        #expect(hex(SigV2.hmacSHA1([UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8)))
            == "b617318655057264e28bc0b6fb378c8ef146be00")
        #expect(hex(SigV2.hmacSHA1(Array("Jefe".utf8), Array("what do ya want for nothing?".utf8)))
            == "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79")
        #expect(hex(SigV2.hmacSHA1([UInt8](repeating: 0xaa, count: 80), Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)))
            == "aa4ae5e15272d00e95705637ce8a3b55ed402112")
    }

    @Test func bucketPaths() {
        #expect(SigV2.bucketPathVariant(Array("/b".utf8)) == Array("/b/".utf8))
        #expect(SigV2.bucketPathVariant(Array("/b/".utf8)) == Array("/b".utf8))
        #expect(SigV2.bucketPathVariant(Array("/b/k".utf8)) == nil)
        #expect(SigV2.bucketPathVariant(Array("/".utf8)) == nil)
    }
}

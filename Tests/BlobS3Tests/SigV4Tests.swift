import HTTPCore
import BlobStore
import MicroHTTPD
import Testing
@testable import BlobS3

/// The examples of AWS's "Signature Version 4 for Amazon S3" documentation, signed with its
/// example key, must give the documented signatures.
@Suite struct SigV4Tests {
    static let secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

    static func verify(_ head: HTTPRequestHead) throws -> (expected: String, presented: String) {
        let query = PercentEncodingQuery.decode(head.query ?? [])
        let signed = try #require(try SigV4.signed(head, query: query))
        let canonical = SigV4.canonicalRequest(method: head.method, rawPath: head.path, query: query, headers: head.headers, signed: signed)
        return (SigV4.signature(secret: secret, signed, stringToSign: SigV4.stringToSign(signed, canonicalRequest: canonical)),
                signed.signature)
    }

    @Test func getObjectWithRange() throws {
        let head = HTTPRequestHead(method: "GET", target: Array("/test.txt".utf8), headers: [
            ("Host", "examplebucket.s3.amazonaws.com"), ("Range", "bytes=0-9"),
            ("x-amz-content-sha256", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            ("x-amz-date", "20130524T000000Z"),
            ("Authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"),
        ])
        let result = try Self.verify(head)
        #expect(result.expected == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
        #expect(result.expected == result.presented)
    }

    @Test func putObjectWithAnEscapedPath() throws {
        let head = HTTPRequestHead(method: "PUT", target: Array("/test%24file.text".utf8), headers: [
            ("Host", "examplebucket.s3.amazonaws.com"), ("Date", "Fri, 24 May 2013 00:00:00 GMT"),
            ("x-amz-date", "20130524T000000Z"), ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
            ("x-amz-content-sha256", "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072"),
            ("Authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"),
        ])
        #expect(try Self.verify(head).expected == "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")
    }

    @Test func presignedGet() throws {
        let target = "/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"
        let head = HTTPRequestHead(method: "GET", target: Array(target.utf8), headers: [("Host", "examplebucket.s3.amazonaws.com")])
        let result = try Self.verify(head)
        #expect(result.expected == "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404")
        #expect(result.expected == result.presented)
    }

    /// Any change to what was signed changes the signature.
    @Test func alteredRequestsDoNotMatch() throws {
        let authorization = "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        for (path, range) in [("/test.txt", "bytes=0-10"), ("/test.tx", "bytes=0-9"), ("/Test.txt", "bytes=0-9")] {
            let head = HTTPRequestHead(method: "GET", target: Array(path.utf8), headers: [
                ("Host", "examplebucket.s3.amazonaws.com"), ("Range", range),
                ("x-amz-content-sha256", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
                ("x-amz-date", "20130524T000000Z"), ("Authorization", authorization),
            ])
            let result = try Self.verify(head)
            #expect(result.expected != result.presented)
        }
    }

    /// RFC 4231's HMAC-SHA256 test cases 1, 2, 6 and 7: short keys, and keys longer than a
    /// block, which are hashed first.
    @Test(arguments: [
        (String(repeating: "0b", count: 20), Array("Hi There".utf8),
         "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        ("4a656665", Array("what do ya want for nothing?".utf8),
         "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        (String(repeating: "aa", count: 131), Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
         "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        (String(repeating: "aa", count: 131),
         Array("This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.".utf8),
         "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
    ])
    func hmacMatchesRFC4231(keyHex: String, data: [UInt8], expected: String) throws {
        let key = try #require(S3Service.hexBytes(keyHex))
        #expect(hex(SigV4.hmac(key, data)) == expected)
    }

    /// The canonical query is sorted by encoded name, then value, whatever order the client
    /// sent; names and values are encoded with AWS's URI encoding (space as %20, `/` as %2F).
    @Test func canonicalQueryIsSortedAndEncoded() throws {
        let target = "/b/k?uploads&z=1&a=2&a=1&X-Amz-Signature=ff&m=a%20b%2Fc~&A=x"
        let head = HTTPRequestHead(method: "GET", target: Array(target.utf8), headers: [("Host", "h"), ("X-Amz-Date", " 1  2 ")])
        let signed = SigV4.Signed(accessKey: "k", scopeDate: "20130524", region: "r", service: "s3",
                                  signedHeaders: ["host", "x-amz-date"], signature: "ff", amzDate: "20130524T000000Z",
                                  payloadHash: "UNSIGNED-PAYLOAD", expires: 60)
        let canonical = SigV4.canonicalRequest(method: "GET", rawPath: head.path, query: PercentEncodingQuery.decode(head.query ?? []),
                                               headers: head.headers, signed: signed)
        #expect(String(decoding: canonical, as: UTF8.self)
            == "GET\n/b/k\nA=x&a=1&a=2&m=a%20b%2Fc~&uploads=&z=1\nhost:h\nx-amz-date:1 2\n\nhost;x-amz-date\nUNSIGNED-PAYLOAD")
    }

    @Test func amzDates() {
        #expect(SigV4.seconds(ofAmzDate: "19700101T000000Z") == 0)
        #expect(SigV4.seconds(ofAmzDate: "20130524T000000Z") == 1_369_353_600)
        #expect(SigV4.seconds(ofAmzDate: "20000229T235959Z") == 951_868_799)
        #expect(SigV4.seconds(ofAmzDate: "2013-05-24T00:00:00Z") == nil)
        #expect(SigV4.seconds(ofAmzDate: "20131324T000000Z") == nil)
    }
}

/// Query decoding as the service does it.
enum PercentEncodingQuery {
    static func decode(_ raw: [UInt8]) -> [(name: String, value: [UInt8])] {
        PercentEncoding.decodeQuery(raw) ?? []
    }
}

import Foundation
import LiveBlobd
import Testing

/// A tokens-file line's `name=NAME` (issue 35, item 19) names its caller where a catalog key's
/// name does: the access log's `principal.name`, `/v1/whoami`'s `name`, the admin key list.
@Suite struct TokenNameTests {
    static let tokens = """
        alice-token-0123456789 read,write name=alice
        s3 AKIDALICE alice-secret-0123456789 read,write name=alice-s3
        plain-token-0123456789 read
        admin-token-0123456789 admin
        """ + "\n"

    @Test func aLinesNameReachesWhoamiAndTheAccessLog() throws {
        let dir = TempDir()
        let file = dir.file("tokens", Array(Self.tokens.utf8))
        chmod(file, 0o600)
        let blobd = try BlobdProcess(["--tokens-file", file, "--s3-listen", "127.0.0.1:0"])
        let digest = String(sha256Hex(Array("alice-token-0123456789".utf8)).prefix(32))
        let whoami = try curl(["-H", "Authorization: Bearer alice-token-0123456789", blobd.baseURL + "/v1/whoami"])
        #expect(whoami.status == 200)
        #expect(whoami.text == #"{"principal":"token:\#(digest)","name":"alice","grants":["read:*","write:*"]}"#, "\(whoami.text)")
        let plain = try curl(["-H", "Authorization: Bearer plain-token-0123456789", blobd.baseURL + "/v1/whoami"])
        #expect(!plain.text.contains("\"name\""), "a line without a name has none: \(plain.text)")
        #expect(try curl(["-X", "PUT", "-H", "Authorization: Bearer alice-token-0123456789", "--data-binary", "x",
                          blobd.baseURL + "/v1/blobs/notes/a.txt"]).status == 201)
        #expect(eventually {
            blobd.stderr.split(separator: "\n").contains { $0.contains("http.method=PUT") && $0.contains("principal=token:\(digest) principal.name=alice") }
        }, "\(blobd.stderr)")
        try KeyAdminTests.python("""
            alice = s3("AKIDALICE", "alice-secret-0123456789")
            check(alice.get_object(Bucket="notes", Key="a.txt")["Body"].read() == b"x", "the S3 line reads")
            """, blobd, port: try #require(blobd.s3Port))
        #expect(eventually {
            blobd.stderr.split(separator: "\n").contains { $0.contains("principal=s3:AKIDALICE principal.name=alice-s3") }
        }, "\(blobd.stderr)")
        let keys = try curl(["-H", "Authorization: Bearer admin-token-0123456789", blobd.baseURL + "/v1/admin/keys"]).text
        #expect(keys.contains(#""id":"token:\#(digest)","name":"alice""#) && keys.contains(#""id":"s3:AKIDALICE","name":"alice-s3""#), "\(keys)")
    }
}

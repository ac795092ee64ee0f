import Foundation
import LiveBlobd
import Testing

/// Issue 20, item 12: one credential (or, in open access, one client address) may have
/// `--max-open-uploads` unfinished uploads, tus and S3 multipart together; beyond, 429 on /v1
/// and QuotaExceeded on S3. Finishing, terminating, aborting or expiring frees a place.
@Suite struct UploadQuotaTests {
    @Test func tusUploadsAreCappedPerToken() throws {
        let dir = TempDir()
        let tokens = dir.file("tokens", Array("alice read,write,delete\nbob write\n".utf8))
        chmod(tokens, 0o600)
        let dataDir = dir.path + "/data"
        var blobd = try BlobdProcess(["--tokens-file", tokens, "--max-open-uploads", "3"], dataDir: dataDir)
        func create(_ token: String) throws -> CurlResponse {
            try Tus(blobd: blobd).create(length: 5, extra: ["-H", "Authorization: Bearer \(token)"])
        }
        let alice = try (0..<3).map { _ in try #require(try create("alice").header("Location")) }
        let refused = try create("alice")
        #expect(refused.status == 429)
        #expect(refused.header("Content-Type") == "application/problem+json")
        #expect(refused.json["type"] as? String == "https://blobd.dev/problems/too-many-uploads")
        #expect(try create("bob").status == 201, "another token has places of its own")

        // A finished upload and a terminated one free their places.
        let patched = try Tus(blobd: blobd).patch(alice[0], offset: 0, Array("hello".utf8), extra: ["-H", "Authorization: Bearer alice"])
        #expect(patched.status == 204)
        #expect(try create("alice").status == 201)
        let terminated = try curl(["-X", "DELETE", "-H", "Tus-Resumable: 1.0.0", "-H", "Authorization: Bearer alice", blobd.baseURL + alice[1]])
        #expect(terminated.status == 204)
        #expect(try create("alice").status == 201)
        #expect(try create("alice").status == 429)

        // The count is the index's: a restart does not reset it.
        #expect(blobd.stop() == 0)
        blobd = try BlobdProcess(["--tokens-file", tokens, "--max-open-uploads", "3"], dataDir: dataDir)
        #expect(try create("alice").status == 429)
        #expect(blobd.stop() == 0)
    }

    @Test func multipartAndTusShareTheCountOfAClientAddressInOpenAccess() throws {
        let blobd = try BlobdProcess(["--s3-listen", "127.0.0.1:0", "--max-open-uploads", "2"])
        let s3 = "http://127.0.0.1:\(try #require(blobd.s3Port))"
        #expect(try Tus(blobd: blobd).create(length: 5).status == 201)
        #expect(try curl(["-X", "PUT", s3 + "/quota"]).status == 200)
        let first = try curl(["-X", "POST", s3 + "/quota/a?uploads"])
        #expect(first.status == 200)
        let refused = try curl(["-X", "POST", s3 + "/quota/b?uploads"])
        #expect(refused.status == 403)
        #expect(refused.text.contains("<Code>QuotaExceeded</Code>"), "\(refused.text)")
        #expect(try Tus(blobd: blobd).create(length: 5).status == 429)
        // Another client address has its own places.
        #expect(try curl(["--interface", "127.0.0.2", "-X", "POST", s3 + "/quota/b?uploads"]).status == 200)
        // An aborted upload frees its place.
        let upload = try #require(first.text.components(separatedBy: "<UploadId>").dropFirst().first?.components(separatedBy: "<").first)
        #expect(try curl(["-X", "DELETE", s3 + "/quota/a?uploadId=\(upload)"]).status == 204)
        #expect(try curl(["-X", "POST", s3 + "/quota/b?uploads"]).status == 200)
        #expect(blobd.stop() == 0)
    }

    /// Behind a trusted proxy every client arrives from the proxy's address: the forwarded
    /// client is the one counted, so one client cannot use up everyone's places.
    @Test func behindATrustedProxyTheForwardedClientIsCounted() throws {
        let blobd = try BlobdProcess(["--s3-listen", "127.0.0.1:0", "--max-open-uploads", "1", "--trusted-proxy", "127.0.0.1/32"])
        let s3 = "http://127.0.0.1:\(try #require(blobd.s3Port))"
        #expect(try curl(["-X", "PUT", s3 + "/proxied"]).status == 200)
        func create(_ client: String, _ key: String) throws -> Int {
            try curl(["-H", "X-Forwarded-For: \(client)", "-X", "POST", s3 + "/proxied/\(key)?uploads"]).status
        }
        #expect(try create("192.0.2.1", "a") == 200)
        #expect(try create("192.0.2.1", "b") == 403)
        #expect(try create("192.0.2.2", "c") == 200)
        #expect(try Tus(blobd: blobd).create(length: 5, extra: ["-H", "X-Forwarded-For: 192.0.2.3"]).status == 201)
        #expect(try Tus(blobd: blobd).create(length: 5, extra: ["-H", "X-Forwarded-For: 192.0.2.1"]).status == 429)
        #expect(blobd.stop() == 0)
    }

    @Test func multipartUploadsAreCappedPerAccessKey() throws {
        let dir = TempDir()
        let tokens = dir.file("tokens", Array("s3 KEYONE secret-one read,write\ns3 KEYTWO secret-two read,write\n".utf8))
        chmod(tokens, 0o600)
        let blobd = try BlobdProcess(["--tokens-file", tokens, "--s3-listen", "127.0.0.1:0", "--max-open-uploads", "1"])
        let s3 = "http://127.0.0.1:\(try #require(blobd.s3Port))"
        func signed(_ key: String, _ secret: String, _ arguments: [String]) throws -> CurlResponse {
            try curl(["--aws-sigv4", "aws:amz:us-east-1:s3", "--user", "\(key):\(secret)",
                      "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD"] + arguments)
        }
        #expect(try signed("KEYONE", "secret-one", ["-X", "PUT", s3 + "/keys"]).status == 200)
        #expect(try signed("KEYONE", "secret-one", ["-X", "POST", s3 + "/keys/a?uploads="]).status == 200)
        let refused = try signed("KEYONE", "secret-one", ["-X", "POST", s3 + "/keys/b?uploads="])
        #expect(refused.status == 403)
        #expect(refused.text.contains("<Code>QuotaExceeded</Code>"), "\(refused.text)")
        #expect(try signed("KEYTWO", "secret-two", ["-X", "POST", s3 + "/keys/b?uploads="]).status == 200)
        #expect(blobd.stop() == 0)
    }
}

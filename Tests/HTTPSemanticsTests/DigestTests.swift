import Foundation
import HTTPTesting
import LiveBlobd
import Testing

/// `Content-Digest` and `Repr-Digest` (RFC 9530): announced digests are verified before a write
/// commits, and every blob answer carries the representation's digest.
@Suite struct DigestTests {
    static let hello = "sha-256=:WJG1tSLV3whtD/CxEPvZ0hu0/HFjrzTQgoai6Eb2vgM=:"

    @Test(arguments: Mode.selected) func digestIsVerified(_ mode: Mode) throws {
        let server = try TestServer(mode)
        let v1 = server.v1, url = "/v1/blobs/digest"
        let good = try v1.put(url, Array("hello\n".utf8), ["Content-Digest: \(Self.hello)"])
        #expect(good.status == 201)
        let bad = try v1.put(url, Array("hello!".utf8), ["Content-Digest: \(Self.hello)"])
        #expect(bad.status == 400)
        #expect(bad.header("Content-Type") == "application/problem+json")
        #expect(bad.json["status"] as? Int == 400)
        // Nothing stored: the first version is still there.
        #expect(try v1.get(url).text == "hello\n")
        let malformed = try v1.put(url, Array("x".utf8), ["Content-Digest: sha-256=nope"])
        #expect(malformed.status == 400)
        #expect(try v1.get(url).text == "hello\n")
    }

    @Test(arguments: Mode.selected) func reprDigestAndOtherAlgorithms(_ mode: Mode) throws {
        let server = try TestServer(mode)
        let v1 = server.v1, url = "/v1/blobs/repr"
        let body = Array("hello\n".utf8)
        #expect(try v1.put(url, body, ["Repr-Digest: \(Self.hello)"]).status == 201)
        #expect(try v1.put(url, Array("hello?".utf8), ["Repr-Digest: \(Self.hello)"]).status == 400)
        // Both fields must agree.
        let other = "sha-256=:\(sha256Base64(Array("other".utf8))):"
        #expect(try v1.put(url, body, ["Content-Digest: \(Self.hello)", "Repr-Digest: \(other)"]).status == 400)
        // A sha-256 of the wrong length is refused; an algorithm blobd does not verify is ignored.
        #expect(try v1.put(url, body, ["Content-Digest: sha-256=:AAAA:"]).status == 400)
        #expect(try v1.put(url, Array("other".utf8), ["Content-Digest: sha-512=:AAAA:"]).status == 200)
        #expect(try v1.put(url, body, ["Content-Digest: sha-512=:AAAA:, \(Self.hello)"]).status == 200)
        #expect(try v1.get(url).text == "hello\n")
    }

    @Test(arguments: Mode.selected) func answersCarryTheReprDigest(_ mode: Mode) throws {
        let server = try TestServer(mode)
        let v1 = server.v1, url = "/v1/blobs/carried"
        let bytes = testBytes(100_000, seed: 3)
        let digest = "sha-256=:\(sha256Base64(bytes)):"
        try v1.put(url, bytes)
        #expect(try v1.get(url).header("Repr-Digest") == digest)
        #expect(try v1.send("HEAD", url).header("Repr-Digest") == digest)
        // The representation's digest, also on a part of it.
        let part = try v1.get(url, ["Range: bytes=10-19"])
        #expect(part.status == 206)
        #expect(part.header("Repr-Digest") == digest)
        // Want-Repr-Digest asks; sha-256 is what blobd has, and what it answers.
        #expect(try v1.get(url, ["Want-Repr-Digest: sha-512=10, sha-256=1"]).header("Repr-Digest") == digest)
        #expect(try v1.get(url, ["Want-Content-Digest: sha-256=1"]).header("Repr-Digest") == digest)
    }
}

import Testing
@testable import BlobStore

@Suite struct DigestTests {
    @Test func knownVectors() {
        #expect(hex(SHA256Hasher.hash([])) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(hex(SHA256Hasher.hash(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        var sha1 = SHA1Hasher()
        Array("abc".utf8).withUnsafeBytes { sha1.update($0) }
        #expect(hex(sha1.finalize()) == "a9993e364706816aba3e25717850c26c9cd0d89d")
    }

    @Test func stateSurvivesSavingAndRestoring() throws {
        let bytes = (0..<100_003).map { UInt8(truncatingIfNeeded: $0 * 7) }
        var first = SHA256Hasher()
        bytes[..<33_333].withUnsafeBytes { first.update($0) }
        var resumed = try #require(SHA256Hasher(state: first.state))
        bytes[33_333...].withUnsafeBytes { resumed.update($0) }
        #expect(resumed.finalize() == SHA256Hasher.hash(bytes))
        #expect(SHA256Hasher(state: [1, 2, 3]) == nil)
    }
}

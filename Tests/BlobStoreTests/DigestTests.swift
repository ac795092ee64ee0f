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

    /// MD5 and SHA-256 in one pass give what OpenSSL gives for each alone, whatever the pieces
    /// (partial blocks before, between and after whole ones, unaligned starts) and lengths.
    @Test func stitchedMD5AndSHA256MatchSeparateOnes() {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<(1 << 20) + 777).map { _ in UInt8.random(in: 0...255, using: &generator) }
        for length in Array(0...200) + [4095, 65_536, bytes.count - 3] {
            let slice = bytes[3..<3 + length]  // an unaligned start
            for pieceSize in [1, 13, 64, 100, 4096, length] where pieceSize > 0 {
                var md5 = MD5Hasher()
                var sha256 = SHA256Hasher()
                var start = slice.startIndex
                while start < slice.endIndex {
                    let stop = start + min(slice.endIndex - start, pieceSize)
                    slice[start..<stop].withUnsafeBytes { md5.update($0, alongWith: &sha256) }
                    start = stop
                }
                var plainMD5 = MD5Hasher()
                slice.withUnsafeBytes { plainMD5.update($0) }
                #expect(md5.finalize() == plainMD5.finalize(), "MD5 of \(length) bytes in pieces of \(pieceSize)")
                #expect(sha256.finalize() == SHA256Hasher.hash(Array(slice)), "SHA-256 of \(length) bytes in pieces of \(pieceSize)")
            }
        }
        // Known vectors through the stitched path (at least one whole block).
        var md5 = MD5Hasher()
        var sha256 = SHA256Hasher()
        let text = Array(String(repeating: "1234567890", count: 8).utf8)
        text.withUnsafeBytes { md5.update($0, alongWith: &sha256) }
        #expect(hex(md5.finalize()) == "57edf4a22be3c955ac49da2e2107b67a")
        #expect(hex(sha256.finalize()) == "f371bc4a311f2b009eef952dd83ca80e2b60026c8e935592d0f9c308453c813e")
    }

    @Test(arguments: [0, 1, 55, 56, 63, 64, 65, 127, 128, 33_333, 100_003])
    func stateSurvivesSavingAndRestoring(split: Int) throws {
        let bytes = (0..<100_003).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let cut = min(split, bytes.count)
        var first = SHA256Hasher()
        bytes[..<cut].withUnsafeBytes { first.update($0) }
        #expect(first.state.count == 41 + cut % 64)
        var resumed = try SHA256Hasher(state: first.state, byteCount: UInt64(cut))
        bytes[cut...].withUnsafeBytes { resumed.update($0) }
        #expect(resumed.finalize() == SHA256Hasher.hash(bytes))
    }

    /// The documented portable form: format 1, H0…H7 big-endian, the byte count, the pending bytes.
    @Test func stateFormatIsTheDocumentedOne() throws {
        var hasher = SHA256Hasher()
        Array("abc".utf8).withUnsafeBytes { hasher.update($0) }
        let initialWords: [UInt32] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]
        var expected: [UInt8] = [1]
        for word in initialWords { expected += [UInt8(word >> 24), UInt8(word >> 16 & 0xFF), UInt8(word >> 8 & 0xFF), UInt8(word & 0xFF)] }
        expected += [0, 0, 0, 0, 0, 0, 0, 3] + Array("abc".utf8)
        #expect(hasher.state == expected)
        // Written by hand from the format, it restores to the same hash.
        var restored = try SHA256Hasher(state: expected, byteCount: 3)
        Array("def".utf8).withUnsafeBytes { restored.update($0) }
        #expect(restored.finalize() == SHA256Hasher.hash(Array("abcdef".utf8)))
    }

    /// A bad saved state is refused with a reason, whatever its bytes; it never reaches OpenSSL.
    @Test func badStatesAreRefused() throws {
        var hasher = SHA256Hasher()
        Array(repeating: UInt8(7), count: 100).withUnsafeBytes { hasher.update($0) }
        let good = hasher.state
        #expect(throws: HashStateError.unknownFormat) { try SHA256Hasher(state: [], byteCount: 0) }
        #expect(throws: HashStateError.unknownFormat) { try SHA256Hasher(state: [1, 2, 3], byteCount: 0) }
        #expect(throws: HashStateError.unknownFormat) { try SHA256Hasher(state: [2] + good.dropFirst(), byteCount: 100) }
        #expect(throws: HashStateError.byteCountMismatch(saved: 100, expected: 99)) { try SHA256Hasher(state: good, byteCount: 99) }
        #expect(throws: HashStateError.wrongLength) { try SHA256Hasher(state: Array(good.dropLast()), byteCount: 100) }
        #expect(throws: HashStateError.wrongLength) { try SHA256Hasher(state: good + [0], byteCount: 100) }
        // A huge byte count with a tiny state: refused, no read past the array.
        var huge = good
        for i in 33..<41 { huge[i] = 0xFF }
        #expect(throws: (any Error).self) { try SHA256Hasher(state: huge, byteCount: UInt64.max) }
        // Random rows of every length up to 200 bytes: refused or valid, never a crash.
        var generator = SystemRandomNumberGenerator()
        for length in 0...200 {
            let random = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = try? SHA256Hasher(state: random, byteCount: UInt64(length))
        }
    }

    /// Releases before 1.1 saved the raw x86-64 SHA256_CTX (h[8], Nl, Nh, data[16], num, md_len as
    /// little-endian words); such rows still resume, and inconsistent ones are refused.
    @Test func legacyRawContextStillResumes() throws {
        let bytes = (0..<1000).map { UInt8(truncatingIfNeeded: $0 * 13) }
        var hasher = SHA256Hasher()
        bytes[..<70].withUnsafeBytes { hasher.update($0) }
        let portable = hasher.state  // 41 + 6 bytes
        func littleEndian(_ word: UInt32) -> [UInt8] { [UInt8(word & 0xFF), UInt8(word >> 8 & 0xFF), UInt8(word >> 16 & 0xFF), UInt8(word >> 24)] }
        var legacy: [UInt8] = []
        for i in 0..<8 {
            let word = portable[(1 + 4 * i)..<(5 + 4 * i)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            legacy += littleEndian(word)
        }
        legacy += littleEndian(70 * 8) + littleEndian(0)
        legacy += Array(portable[41...]) + Array(repeating: 0, count: 64 - 6)
        legacy += littleEndian(6) + littleEndian(32)
        #expect(legacy.count == 112)
        var resumed = try SHA256Hasher(state: legacy, byteCount: 70)
        bytes[70...].withUnsafeBytes { resumed.update($0) }
        #expect(resumed.finalize() == SHA256Hasher.hash(bytes))
        var inconsistent = legacy
        inconsistent[104] = 9  // num no longer count % 64
        #expect(throws: HashStateError.unknownFormat) { try SHA256Hasher(state: inconsistent, byteCount: 70) }
    }
}

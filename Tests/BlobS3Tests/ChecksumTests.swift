import Foundation
import Testing
import BlobStore
@testable import BlobS3

/// The checksums against their published check values (over "123456789"), whole and fed in
/// pieces, and the second hashing thread against hashing inline.
@Suite struct ChecksumTests {
    static let check = Array("123456789".utf8)

    static func value(_ algorithm: ChecksumAlgorithm, _ bytes: [UInt8], pieces: Int = 1) -> String {
        var hasher = ChecksumHasher(algorithm)
        let size = max(1, bytes.count / pieces)
        for start in stride(from: 0, to: bytes.count, by: size) {
            bytes[start..<min(bytes.count, start + size)].withUnsafeBytes { hasher.update($0) }
        }
        return hasher.value()
    }

    @Test(arguments: [
        (ChecksumAlgorithm.crc32, "cbf43926"), (.crc32c, "e3069283"), (.crc64nvme, "ae8b14860a799888"),
        (.sha1, "f7c3bc1d808e04732adf679965ccc34ca7ae3441"),
        (.sha256, "15e2b0d3c33891ebb0f1ef609ec419420c20e320ce94c65fbc8c3312448eb225"),
    ])
    func checkValues(algorithm: ChecksumAlgorithm, hexDigest: String) {
        let expected = Data((0..<hexDigest.count / 2).map { i in
            UInt8(hexDigest.dropFirst(2 * i).prefix(2), radix: 16) ?? 0
        }).base64EncodedString()
        #expect(Self.value(algorithm, Self.check) == expected)
        #expect(Self.value(algorithm, Self.check, pieces: 9) == expected)
    }

    /// An S3 body's digests as a store stream computes them: the MD5 and the checksum (fed on
    /// the hashing thread for a large body) match hashing the bytes on their own; a SHA-256
    /// checksum is the store's SHA-256.
    @Test(arguments: [ChecksumAlgorithm.crc32c, .sha256])
    func digestsOfAWrittenBody(algorithm: ChecksumAlgorithm) throws {
        let dir = NSTemporaryDirectory() + "blobd-checksum-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try BlobStore(directory: dir)
        let body = (0..<(3 << 20) + 12345).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }
        for size in [UInt64(100), UInt64(body.count), nil] {
            let bytes = size == 100 ? Array(body[..<100]) : body
            let digests = BodyDigests(checksum: algorithm, size: size)
            let stream = try store.beginWrite(expectedSize: size, hasher: digests.hasher)
            for start in stride(from: 0, to: bytes.count, by: 70_001) {
                try bytes[start..<min(bytes.count, start + 70_001)].withUnsafeBytes { try stream.write($0) }
            }
            let (md5, checksum) = digests.values(try stream.digests())
            stream.abandon()
            var inline = MD5Hasher()
            bytes.withUnsafeBytes { inline.update($0) }
            #expect(md5 == inline.finalize())
            #expect(checksum == Self.value(algorithm, bytes))
        }
    }
}

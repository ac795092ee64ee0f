import HTTPCore
import BlobStore
import CZlib
import Dispatch
import Foundation
import MicroHTTPD

/// An S3 additional checksum: `x-amz-checksum-ALGORITHM`, the base64 of the big-endian digest.
enum ChecksumAlgorithm: String, CaseIterable, Sendable {
    case crc32, crc32c, crc64nvme, sha1, sha256

    /// The algorithm of a header or trailer name (`x-amz-checksum-crc32`, any case).
    init?(field name: String) {
        let lowered = name.lowercased()
        guard lowered.hasPrefix(Self.fieldPrefix) else { return nil }
        self.init(rawValue: String(lowered.dropFirst(Self.fieldPrefix.count)))
    }

    /// The algorithm of `x-amz-checksum-algorithm` / `x-amz-sdk-checksum-algorithm` (`CRC32`).
    init?(name: String) {
        self.init(rawValue: name.lowercased())
    }

    /// The algorithm a request header names (`x-amz-checksum-algorithm: SHA256`); InvalidRequest if none.
    init(header: String, _ value: String) throws(S3Error) {
        guard let algorithm = ChecksumAlgorithm(name: String(value.trimmingOWS())) else {
            throw S3Error(.invalidRequest, "Value for \(header) header is invalid.")
        }
        self = algorithm
    }

    static let fieldPrefix = "x-amz-checksum-"

    /// The header (and trailer) that carries it.
    var field: String { Self.fieldPrefix + rawValue }

    /// The XML element that carries it (`ChecksumCRC32`).
    var element: String { "Checksum" + rawValue.uppercased() }

    /// Bytes in a digest of this algorithm.
    var digestLength: Int {
        switch self {
        case .crc32, .crc32c: 4
        case .crc64nvme: 8
        case .sha1: 20
        case .sha256: 32
        }
    }

    /// Whether `value` is a well-formed checksum of this algorithm: the base64 of a digest of
    /// its length. S3 answers any other InvalidRequest, before comparing.
    func isWellFormed(_ value: String) -> Bool {
        Data(base64Encoded: value).map { $0.count == digestLength } ?? false
    }

    /// A checksum as blobd keeps it (`crc32:BASE64`): its algorithm and value.
    static func split(_ stored: String?) -> (algorithm: ChecksumAlgorithm, value: String)? {
        guard let stored, let colon = stored.firstIndex(of: ":"),
              let algorithm = ChecksumAlgorithm(name: String(stored[..<colon])) else { return nil }
        return (algorithm, String(stored[stored.index(after: colon)...]))
    }

    /// Checked before a checksum header is taken as one: these name options, not values.
    static let optionFields: Set<String> = ["x-amz-checksum-mode", "x-amz-checksum-type", "x-amz-checksum-algorithm"]
}

/// The checksum a multipart upload asks for (CreateMultipartUpload's `x-amz-checksum-algorithm`
/// and `x-amz-checksum-type`): every part carries one in `algorithm`, and the object's is either
/// made from the parts' (COMPOSITE: the algorithm over the parts' binary checksums in order,
/// then `-N`) or computed over all its bytes at Complete (FULL_OBJECT). As in S3, SHA-1 and
/// SHA-256 are composite only, CRC-64/NVME is full-object only, and each is its default.
struct MultipartChecksum: Equatable {
    let algorithm: ChecksumAlgorithm
    let composite: Bool

    /// The checksum a CreateMultipartUpload asks for, if any.
    init?(_ head: HTTPRequestHead) throws {
        let type = head["x-amz-checksum-type"].map { String($0.trimmingOWS()).uppercased() }
        guard let name = head["x-amz-checksum-algorithm"] else {
            if type != nil { throw S3Error(.invalidRequest, "x-amz-checksum-type needs an x-amz-checksum-algorithm.") }
            return nil
        }
        guard let algorithm = ChecksumAlgorithm(name: String(name.trimmingOWS())) else {
            throw S3Error(.invalidRequest, "Checksum algorithm provided is unsupported. Please try again with any of the valid types: [CRC32, CRC32C, CRC64NVME, SHA1, SHA256]")
        }
        self.algorithm = algorithm
        switch type {
        case nil: composite = algorithm != .crc64nvme
        case "COMPOSITE"?: composite = true
        case "FULL_OBJECT"?: composite = false
        default: throw S3Error(.invalidRequest, "Value for x-amz-checksum-type header is invalid.")
        }
        if composite && algorithm == .crc64nvme || !composite && [.sha1, .sha256].contains(algorithm) {
            throw S3Error(.invalidRequest, "The \(typeName) checksum type cannot be used with the \(algorithm.rawValue) checksum algorithm.")
        }
    }

    /// As `MultipartUpload.checksum` keeps it: `sha256:COMPOSITE`.
    init?(stored: String?) {
        guard let stored, let colon = stored.firstIndex(of: ":"),
              let algorithm = ChecksumAlgorithm(name: String(stored[..<colon])) else { return nil }
        self.algorithm = algorithm
        composite = stored[stored.index(after: colon)...] == "COMPOSITE"
    }

    var stored: String { "\(algorithm.rawValue):\(typeName)" }
    var typeName: String { composite ? "COMPOSITE" : "FULL_OBJECT" }

    /// The elements that name it in ListParts and ListMultipartUploads.
    var elements: String {
        XML.element("ChecksumAlgorithm", algorithm.rawValue.uppercased()) + XML.element("ChecksumType", typeName)
    }

    /// The headers that name it (CreateMultipartUpload's answer).
    var headers: [(name: String, value: String)] {
        [("x-amz-checksum-algorithm", algorithm.rawValue.uppercased()), ("x-amz-checksum-type", typeName)]
    }

    /// The composite checksum of `parts` (each with its base64 checksum in this algorithm):
    /// nil when one lacks it.
    func composite(of parts: [UploadedPart]) -> String? {
        var hasher = ChecksumHasher(algorithm)
        for part in parts {
            guard let text = part.checksum, let digest = Data(base64Encoded: text) else { return nil }
            digest.withUnsafeBytes { hasher.update($0) }
        }
        return "\(hasher.value())-\(parts.count)"
    }
}

/// A checksum computed as the bytes stream. CRC-32 comes from zlib; CRC-32C and CRC-64/NVME
/// are written here (table-driven) because Debian has no C library for either; SHA-1 and
/// SHA-256 come from OpenSSL.
struct ChecksumHasher {
    let algorithm: ChecksumAlgorithm
    private var crc32: UInt32 = 0
    private var crc64: UInt64 = 0
    private var sha1 = SHA1Hasher()
    private var sha256 = SHA256Hasher()

    init(_ algorithm: ChecksumAlgorithm) {
        self.algorithm = algorithm
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        switch algorithm {
        case .crc32:
            crc32 = UInt32(CZlib.crc32(UInt(crc32), bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt32(bytes.count)))
        case .crc32c: crc32 = crc32c.update(crc32, bytes)
        case .crc64nvme: crc64 = crc64nvme.update(crc64, bytes)
        case .sha1: sha1.update(bytes)
        case .sha256: sha256.update(bytes)
        }
    }

    /// The checksum as S3 writes it: base64 of the big-endian bytes.
    func value() -> String {
        let digest: [UInt8]
        switch algorithm {
        case .crc32, .crc32c: digest = (0..<4).map { UInt8(truncatingIfNeeded: crc32 >> (24 - 8 * $0)) }
        case .crc64nvme: digest = (0..<8).map { UInt8(truncatingIfNeeded: crc64 >> (56 - 8 * $0)) }
        case .sha1: digest = sha1.finalize()
        case .sha256: digest = sha256.finalize()
        }
        return Data(digest).base64EncodedString()
    }
}

/// A reflected, table-driven CRC whose initial value and final XOR are all ones: CRC-32C
/// (Castagnoli, polynomial 0x82F63B78 reflected) and CRC-64/NVME (0x9A6C9329AC4BC9B5), whose
/// check values over "123456789" are 0xE3069283 and 0xAE8B14860A799888.
struct ReflectedCRC<Value: FixedWidthInteger & UnsignedInteger & Sendable>: Sendable {
    private let table: [Value]

    init(polynomial: Value) {
        table = (0..<256).map { index in
            var value = Value(index)
            for _ in 0..<8 { value = value & 1 == 1 ? (value >> 1) ^ polynomial : value >> 1 }
            return value
        }
    }

    func update(_ crc: Value, _ bytes: UnsafeRawBufferPointer) -> Value {
        var value = ~crc
        table.withUnsafeBufferPointer { table in
            for byte in bytes { value = table[Int(truncatingIfNeeded: value ^ Value(byte)) & 0xFF] ^ (value >> 8) }
        }
        return ~value
    }
}

let crc32c = ReflectedCRC<UInt32>(polynomial: 0x82F6_3B78)
let crc64nvme = ReflectedCRC<UInt64>(polynomial: 0x9A6C_9329_AC4B_C9B5)

/// What an S3 body's bytes are hashed into: the store's `BodyHasher` (SHA-256, and MD5 for the
/// ETag, on a second thread for a large body) and at most one `x-amz-checksum-*`, which the
/// hasher feeds on the same thread. A SHA-256 checksum is the store's own SHA-256, not computed
/// twice.
///
/// `@unchecked Sendable` is sound: `checksum` is updated only by the hasher, on one thread at a
/// time, and read only after `BodyHasher.finish()` has waited for it.
final class BodyDigests: @unchecked Sendable {
    let hasher: BodyHasher
    let algorithm: ChecksumAlgorithm?
    private let checksum: Checksum?

    /// The checksum the hasher feeds.
    private final class Checksum {
        var hasher: ChecksumHasher
        init(_ algorithm: ChecksumAlgorithm) { hasher = ChecksumHasher(algorithm) }
    }

    /// `size`: the body's length if known. `md5`: false when the body's MD5 is known already (a copy).
    init(checksum algorithm: ChecksumAlgorithm?, size: UInt64?, md5: Bool = true) {
        self.algorithm = algorithm
        let checksum = algorithm.flatMap { $0 == .sha256 ? nil : Checksum($0) }
        self.checksum = checksum
        hasher = BodyHasher(md5: md5, extra: checksum.map { checksum in { checksum.hasher.update($0) } }, expectedSize: size)
    }

    /// The MD5 and the checksum (base64) of every byte, from the hasher's finished digests.
    func values(_ digests: BodyHasher.Digests) -> (md5: [UInt8], checksum: String?) {
        let value = algorithm == .sha256 ? Data(digests.sha256).base64EncodedString() : checksum?.hasher.value()
        return (digests.md5 ?? [], value)
    }
}

import BlobHTTP
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

/// What an S3 body's bytes are hashed into besides the store's SHA-256: MD5 (the ETag) and at
/// most one `x-amz-checksum-*`.
///
/// MD5 runs at about a third of SHA-256's speed, so on the connection's thread it would cap a
/// large upload well below a /v1 upload. A body of 1 MiB or more is therefore hashed on a
/// second thread: its bytes are copied into one of four 256 KiB buffers that a serial queue
/// hashes in order, while the connection's thread goes on receiving, SHA-256-hashing and
/// writing. Memory per upload stays at 1 MiB. Smaller bodies are hashed inline, where a thread
/// hop would cost more than the hashing.
///
/// `@unchecked Sendable` is sound: the hashers are touched only on `queue` once it exists (and
/// only on the caller's thread otherwise), each buffer is owned by the caller until handed to
/// the queue and by the queue until it signals `free`, and `finish` waits for the queue.
final class BodyDigests: @unchecked Sendable {
    static let offloadThreshold: UInt64 = 1 << 20
    private static let bufferSize = 256 * 1024
    private static let bufferCount = 4

    private var md5 = MD5Hasher()
    private var checksum: ChecksumHasher?
    private let queue: DispatchQueue?
    private let free = DispatchSemaphore(value: BodyDigests.bufferCount)
    private var buffers: [UnsafeMutableRawBufferPointer] = []
    /// The buffer being filled (an index into `buffers`), and how full it is; -1 when none.
    private var current = -1
    private var filled = 0
    private var next = 0

    /// `size`: the body's length if known; a body of unknown length counts as large.
    init(checksum algorithm: ChecksumAlgorithm?, size: UInt64?) {
        checksum = algorithm.map(ChecksumHasher.init)
        if size.map({ $0 >= Self.offloadThreshold }) ?? true {
            queue = DispatchQueue(label: "blobd.s3.digests")
            buffers = (0..<Self.bufferCount).map { _ in .allocate(byteCount: Self.bufferSize, alignment: 64) }
        } else {
            queue = nil
        }
    }

    deinit {
        queue?.sync {}
        for buffer in buffers { buffer.deallocate() }
    }

    /// The checksum being computed, if any.
    var checksumAlgorithm: ChecksumAlgorithm? { checksum?.algorithm }

    func update(_ bytes: UnsafeRawBufferPointer) {
        guard queue != nil else { return hash(bytes) }
        var rest = bytes
        while !rest.isEmpty {
            if current < 0 {
                free.wait()
                current = next
                next = (next + 1) % buffers.count
                filled = 0
            }
            let buffer = buffers[current]
            let count = min(rest.count, buffer.count - filled)
            UnsafeMutableRawBufferPointer(rebasing: buffer[filled..<filled + count])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: rest[..<count]))
            filled += count
            rest = UnsafeRawBufferPointer(rebasing: rest[count...])
            if filled == buffer.count { handOver() }
        }
    }

    /// The MD5 and the checksum (base64) of every byte given, once all are hashed.
    func finish() -> (md5: [UInt8], checksum: String?) {
        if let queue {
            if current >= 0 { handOver() }
            return queue.sync { (md5.finalize(), checksum?.value()) }
        }
        return (md5.finalize(), checksum?.value())
    }

    private func handOver() {
        guard let queue else { return }
        let (index, count) = (current, filled)
        current = -1
        queue.async { [self] in
            hash(UnsafeRawBufferPointer(rebasing: buffers[index][..<count]))
            free.signal()
        }
    }

    private func hash(_ bytes: UnsafeRawBufferPointer) {
        md5.update(bytes)
        checksum?.update(bytes)
    }
}

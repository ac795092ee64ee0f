import BlobCore
import CCrypto
import CDigests

/// Incremental SHA-256 whose state can be saved and restored (resumable uploads keep it
/// between requests and across restarts).
public struct SHA256Hasher: Sendable {
    fileprivate var context = SHA256_CTX()

    /// A fresh hash.
    public init() {
        SHA256_Init(&context)
    }

    /// Restores a state saved from `state` after exactly `byteCount` bytes. Throws (touching
    /// nothing) unless `state` is a well-formed saved state of that many bytes; see `state` for
    /// the format. Also reads the raw `SHA256_CTX` that releases before 1.1 saved.
    public init(state: [UInt8], byteCount: UInt64) throws(HashStateError) {
        let saved = try Self.legacyState(state) ?? state
        guard saved.count >= Self.stateHeaderSize, saved[0] == Self.stateFormat else { throw .unknownFormat }
        let count = saved[33..<41].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        guard count == byteCount else { throw .byteCountMismatch(saved: count, expected: byteCount) }
        let pending = Int(count % 64)
        guard saved.count == Self.stateHeaderSize + pending, count < 1 << 61 else { throw .wrongLength }
        var words = [UInt32](repeating: 0, count: 8)
        for i in 0..<8 {
            words[i] = saved[(1 + 4 * i)..<(5 + 4 * i)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        }
        SHA256_Init(&context)
        words.withUnsafeBytes { source in withUnsafeMutableBytes(of: &context.h) { $0.copyMemory(from: source) } }
        context.Nl = UInt32(truncatingIfNeeded: count << 3)
        context.Nh = UInt32(truncatingIfNeeded: count >> 29)
        withUnsafeMutableBytes(of: &context.data) { data in
            data.copyBytes(from: saved[Self.stateHeaderSize...])
        }
        context.num = UInt32(pending)
    }

    /// The state, to restore later with `init(state:byteCount:)`, in a form that does not
    /// depend on the OpenSSL build (nodes of one cluster may differ):
    /// - byte 0: the format, 1;
    /// - bytes 1–32: the eight 32-bit chaining words H0…H7, big-endian;
    /// - bytes 33–40: the number of bytes hashed so far, big-endian;
    /// - then the bytes of the last, incomplete 64-byte block (count mod 64 of them).
    public var state: [UInt8] {
        let count = UInt64(context.Nh) << 29 | UInt64(context.Nl) >> 3
        var out: [UInt8] = [Self.stateFormat]
        out.reserveCapacity(Self.stateHeaderSize + 64)
        withUnsafeBytes(of: context.h) { raw in
            for word in raw.bindMemory(to: UInt32.self) { out += withUnsafeBytes(of: word.bigEndian) { Array($0) } }
        }
        out += withUnsafeBytes(of: count.bigEndian) { Array($0) }
        withUnsafeBytes(of: context.data) { out += $0.prefix(Int(count % 64)) }
        return out
    }

    /// The format byte of `state`, and the size of its fixed part.
    package static let stateFormat: UInt8 = 1
    package static let stateHeaderSize = 41

    /// The portable form of a raw x86-64 `SHA256_CTX` (112 bytes: h[8], Nl, Nh, data[16], num,
    /// md_len, as little-endian 32-bit words) saved by releases before 1.1; nil if `state` is not
    /// that size. Throws if its fields are inconsistent.
    package static func legacyState(_ state: [UInt8]) throws(HashStateError) -> [UInt8]? {
        guard state.count == 112 else { return nil }
        func word(_ index: Int) -> UInt32 {
            state[(4 * index)..<(4 * index + 4)].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        }
        let count = UInt64(word(9)) << 29 | UInt64(word(8)) >> 3
        let pending = Int(word(26))
        guard word(8) & 7 == 0, pending < 64, pending == Int(count % 64), word(27) == 32 else { throw .unknownFormat }
        var out: [UInt8] = [stateFormat]
        for i in 0..<8 { out += withUnsafeBytes(of: word(i).bigEndian) { Array($0) } }
        out += withUnsafeBytes(of: count.bigEndian) { Array($0) }
        out += state[40..<(40 + pending)]
        return out
    }

    /// Adds bytes.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        SHA256_Update(&context, bytes.baseAddress, bytes.count)
    }

    /// The digest of everything added so far (the hasher can go on).
    public func finalize() -> [UInt8] {
        var copy = context
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        SHA256_Final(&digest, &copy)
        return digest
    }

    /// SHA-256 of `bytes`.
    public static func hash(_ bytes: [UInt8]) -> [UInt8] {
        var hasher = SHA256Hasher()
        bytes.withUnsafeBytes { hasher.update($0) }
        return hasher.finalize()
    }
}

/// Why a saved SHA-256 state cannot be restored.
public enum HashStateError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not a state this release writes or reads.
    case unknownFormat
    /// The pending bytes do not match the byte count.
    case wrongLength
    /// The state is of a different number of bytes than the upload's offset.
    case byteCountMismatch(saved: UInt64, expected: UInt64)

    public var description: String {
        switch self {
        case .unknownFormat: "not a saved SHA-256 state of a known format"
        case .wrongLength: "the saved SHA-256 state has the wrong length for its byte count"
        case .byteCountMismatch(let saved, let expected): "the SHA-256 state covers \(saved) bytes, the upload \(expected)"
        }
    }
}

/// Incremental MD5, for S3's ETags and Content-MD5 (integrity, not security).
public struct MD5Hasher: Sendable {
    fileprivate var context = MD5_CTX()

    /// A fresh hash.
    public init() {
        MD5_Init(&context)
    }

    /// Adds bytes.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        MD5_Update(&context, bytes.baseAddress, bytes.count)
    }

    /// The digest of everything added so far.
    public func finalize() -> [UInt8] {
        var copy = context
        var digest = [UInt8](repeating: 0, count: Int(MD5_DIGEST_LENGTH))
        MD5_Final(&digest, &copy)
        return digest
    }
}

extension MD5Hasher {
    /// Adds `bytes` to this MD5 and to `sha256` in one pass: where the CPU has SHA extensions,
    /// the two are interleaved block by block (CDigests), and SHA-256 costs next to nothing on
    /// top of MD5's dependency chain (about 650 MB/s for both, against 450 one after the other).
    public mutating func update(_ bytes: UnsafeRawBufferPointer, alongWith sha256: inout SHA256Hasher) {
        blobd_md5_sha256_update(&context, &sha256.context, bytes.baseAddress, bytes.count)
    }
}

/// Incremental SHA-1, for tus `Upload-Checksum: sha1 …` (integrity only, not security).
public struct SHA1Hasher: Sendable {
    private var context = SHA_CTX()

    /// A fresh hash.
    public init() {
        SHA1_Init(&context)
    }

    /// Adds bytes.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        SHA1_Update(&context, bytes.baseAddress, bytes.count)
    }

    /// The digest of everything added so far.
    public func finalize() -> [UInt8] {
        var copy = context
        var digest = [UInt8](repeating: 0, count: Int(SHA_DIGEST_LENGTH))
        SHA1_Final(&digest, &copy)
        return digest
    }
}

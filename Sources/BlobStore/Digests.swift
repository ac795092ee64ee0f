import CCrypto

/// Incremental SHA-256 whose state can be saved and restored (resumable uploads keep it
/// between requests and across restarts).
public struct SHA256Hasher: Sendable {
    private var context = SHA256_CTX()

    /// A fresh hash.
    public init() {
        SHA256_Init(&context)
    }

    /// Restores a state saved from `state`; nil if it is not one.
    public init?(state: [UInt8]) {
        guard state.count == MemoryLayout<SHA256_CTX>.size else { return nil }
        withUnsafeMutableBytes(of: &context) { $0.copyBytes(from: state) }
    }

    /// The state, to restore later with `init(state:)`.
    public var state: [UInt8] {
        withUnsafeBytes(of: context) { Array($0) }
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

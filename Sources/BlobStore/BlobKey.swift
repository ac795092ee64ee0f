/// A validated blob key: 1...1024 bytes of UTF-8, `/`-separated segments, none empty, `.` or
/// `..`, and no control characters. Keys are byte strings: no normalisation is applied.
public struct BlobKey: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Longest key, in bytes.
    public static let maxLength = 1024

    /// The key's text.
    public let rawValue: String

    /// Validates decoded key bytes.
    public init(validating bytes: some Collection<UInt8>) throws(StoreError) {
        guard !bytes.isEmpty else { throw .invalidKey("the key is empty") }
        guard bytes.count <= Self.maxLength else {
            throw .invalidKey("the key is \(bytes.count) bytes long; at most \(Self.maxLength) are allowed")
        }
        if let control = bytes.first(where: { $0 < 0x20 || $0 == 0x7F }) {
            throw .invalidKey("the key contains the control character 0x\(String(control, radix: 16, uppercase: true))")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw .invalidKey("the key is not valid UTF-8")
        }
        for segment in bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            if segment.isEmpty { throw .invalidKey("the key has an empty segment") }
            if segment.elementsEqual([UInt8(ascii: ".")]) || segment.elementsEqual([UInt8(ascii: "."), UInt8(ascii: ".")]) {
                throw .invalidKey("the key has a '.' or '..' segment")
            }
        }
        self.rawValue = text
    }

    /// Validates a key given as text.
    public init(_ text: String) throws(StoreError) {
        try self.init(validating: Array(text.utf8))
    }

    /// The key's UTF-8 bytes.
    public var bytes: [UInt8] { Array(rawValue.utf8) }

    public var description: String { rawValue }

    /// Bytewise order, as the listing promises (not Swift's Unicode string order).
    public static func < (lhs: BlobKey, rhs: BlobKey) -> Bool {
        lhs.rawValue.utf8.lexicographicallyPrecedes(rhs.rawValue.utf8)
    }

    /// Keys are byte strings: compare bytes, not canonically-equivalent characters.
    public static func == (lhs: BlobKey, rhs: BlobKey) -> Bool {
        lhs.rawValue.utf8.elementsEqual(rhs.rawValue.utf8)
    }

    public func hash(into hasher: inout Hasher) {
        for byte in rawValue.utf8 { hasher.combine(byte) }
    }
}

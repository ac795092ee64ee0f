/// A validated blob key: 1...1088 bytes of UTF-8, `/`-separated segments, none `.` or `..`, and
/// no control characters. Segments may be empty (`dir/`, `a//b`), as S3 keys are; /v1 names such
/// keys with `%2F`. Keys are byte strings: no normalisation is applied.
public struct BlobKey: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Longest key, in bytes: an S3 key of 1024 bytes under a bucket name of up to 63 and its slash.
    public static let maxLength = 1088

    /// The key's text.
    public let rawValue: String

    /// Validates decoded key bytes.
    public init(validating bytes: some Collection<UInt8>) throws(StoreError) {
        func validate(_ buffer: UnsafeBufferPointer<UInt8>) -> Result<String, StoreError> {
            Result { () throws(StoreError) in try Self.validate(buffer) }
        }
        let result = bytes.withContiguousStorageIfAvailable(validate)
            ?? Array(bytes).withUnsafeBufferPointer(validate)
        self.rawValue = try result.get()
    }

    /// The key rules, in one pass over the bytes; returns the key's text.
    private static func validate(_ bytes: UnsafeBufferPointer<UInt8>) throws(StoreError) -> String {
        guard !bytes.isEmpty else { throw .invalidKey("the key is empty") }
        guard bytes.count <= maxLength else {
            throw .invalidKey("the key is \(bytes.count) bytes long; at most \(maxLength) are allowed")
        }
        // Length of the current segment, and whether it is all dots so far.
        var segmentLength = 0
        var segmentIsDots = true
        for byte in bytes {
            if byte < 0x20 || byte == 0x7F {
                throw .invalidKey("the key contains the control character 0x\(String(byte, radix: 16, uppercase: true))")
            }
            if byte == UInt8(ascii: "/") {
                try checkSegment(length: segmentLength, isDots: segmentIsDots)
                segmentLength = 0
                segmentIsDots = true
            } else {
                segmentLength += 1
                segmentIsDots = segmentIsDots && byte == UInt8(ascii: ".")
            }
        }
        try checkSegment(length: segmentLength, isDots: segmentIsDots)
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw .invalidKey("the key is not valid UTF-8")
        }
        return text
    }

    private static func checkSegment(length: Int, isDots: Bool) throws(StoreError) {
        if isDots && (1...2).contains(length) { throw .invalidKey("the key has a '.' or '..' segment") }
    }

    /// Validates a key given as text.
    public init(_ text: String) throws(StoreError) {
        try self.init(validating: Array(text.utf8))
    }

    /// The key's UTF-8 bytes.
    public var bytes: [UInt8] { Array(rawValue.utf8) }

    /// The SHA-256 a key of exactly 64 hex digits (either case) names: such a key is
    /// content-addressed (what `POST /v1/blobs` stores at), and only the bytes with that digest
    /// may be stored at it. Nil for every other key.
    public var contentAddress: [UInt8]? {
        let digits = rawValue.utf8
        guard digits.count == 64 else { return nil }
        var digest: [UInt8] = []
        digest.reserveCapacity(32)
        var high: UInt8?
        for digit in digits {
            let value: UInt8
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): value = digit - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): value = digit - UInt8(ascii: "A") + 10
            default: return nil
            }
            if let first = high {
                digest.append(first << 4 | value)
                high = nil
            } else {
                high = value
            }
        }
        return digest
    }

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

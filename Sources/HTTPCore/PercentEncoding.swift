/// Strict percent-decoding (RFC 3986 §2.1) and the encoding blobd uses in `Location`.
public enum PercentEncoding {
    /// Decodes `%XX` escapes. Returns nil when a `%` is not followed by two hex digits.
    /// Nothing else is changed: `+` stays a plus, and the result may be any bytes (the caller
    /// validates them).
    /// Inlinable, so that callers in other modules get it specialized for their collection.
    @inlinable
    public static func decode(_ bytes: some Collection<UInt8>) -> [UInt8]? {
        guard bytes.contains(UInt8(ascii: "%")) else { return Array(bytes) }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let byte = bytes[index]
            index = bytes.index(after: index)
            guard byte == UInt8(ascii: "%") else {
                out.append(byte)
                continue
            }
            guard index != bytes.endIndex, let high = hexValue(bytes[index]) else { return nil }
            index = bytes.index(after: index)
            guard index != bytes.endIndex, let low = hexValue(bytes[index]) else { return nil }
            index = bytes.index(after: index)
            out.append(high << 4 | low)
        }
        return out
    }

    /// Encodes every byte outside RFC 3986's unreserved set, keeping `/` as the segment separator.
    public static func encodePath(_ text: String) -> String {
        encode(text.utf8) { isUnreserved($0) || $0 == UInt8(ascii: "/") }
    }

    /// Encodes every byte outside RFC 3986's unreserved set, `/` included (AWS SigV4's URI
    /// encoding of query names and values).
    public static func encodeComponent(_ bytes: some Sequence<UInt8>) -> String {
        encode(bytes, keeping: isUnreserved)
    }

    /// Appends `bytes` to `out` as `encodeComponent` encodes them. Inlinable, so that a caller
    /// that encodes on every request (SigV4's canonical query) gets it specialized.
    @inlinable
    public static func appendComponent(_ bytes: some Sequence<UInt8>, to out: inout [UInt8]) {
        append(bytes, keeping: isUnreserved, to: &out)
    }

    /// `%XX` (uppercase) for every byte `keeping` refuses.
    private static func encode(_ bytes: some Sequence<UInt8>, keeping: (UInt8) -> Bool) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount)
        append(bytes, keeping: keeping, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    @inlinable
    static func append(_ bytes: some Sequence<UInt8>, keeping: (UInt8) -> Bool, to out: inout [UInt8]) {
        for byte in bytes {
            if keeping(byte) {
                out.append(byte)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(upperHexDigit(byte >> 4))
                out.append(upperHexDigit(byte & 0xF))
            }
        }
    }

    @usableFromInline
    static func upperHexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "A") + value - 10
    }

    /// Splits a raw query string into decoded name/value pairs (`a=1&b=2`). Returns nil when
    /// an escape is invalid. A name without `=` has an empty value.
    public static func decodeQuery(_ query: [UInt8]) -> [(name: String, value: [UInt8])]? {
        var pairs: [(name: String, value: [UInt8])] = []
        var start = query.startIndex
        while start < query.endIndex {
            let end = query[start...].firstIndex(of: UInt8(ascii: "&")) ?? query.endIndex
            defer { start = end + 1 }
            guard start < end else { continue }
            let part = query[start..<end]
            let equals = part.firstIndex(of: UInt8(ascii: "="))
            guard let name = decode(part[..<(equals ?? end)]),
                  let value = decode(equals.map { part[($0 + 1)...] } ?? []) else { return nil }
            pairs.append((String(decoding: name, as: UTF8.self), value))
        }
        return pairs
    }

    @usableFromInline
    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "_"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }

    @usableFromInline
    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

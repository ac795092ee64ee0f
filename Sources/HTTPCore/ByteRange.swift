/// One range-spec of a `Range: bytes=` header (RFC 9110 §14.1.1), before the size is known.
public enum ByteRangeSpec: Equatable, Sendable {
    /// `first-last` or `first-` (last nil).
    case from(first: UInt64, last: UInt64?)
    /// `-length`: the last `length` bytes.
    case suffix(length: UInt64)

    /// Parses a Range value; nil when it is malformed or not in bytes (then it is ignored).
    /// Numbers too large for 64 bits saturate, which keeps their meaning (beyond any size).
    public static func parseHeader(_ value: String) -> [ByteRangeSpec]? {
        var value = value
        return value.withUTF8(parse)
    }

    private typealias Bytes = Slice<UnsafeBufferPointer<UInt8>>

    private static func parse(_ value: UnsafeBufferPointer<UInt8>) -> [ByteRangeSpec]? {
        // The unit, case-insensitively (RFC 9110 §14.1).
        guard let equals = value.firstIndex(of: UInt8(ascii: "=")), equals == 5,
              zip(value[..<equals], "bytes".utf8).allSatisfy({ $0 | 0x20 == $1 }) else { return nil }
        var specs: [ByteRangeSpec] = []
        var rest = value[(equals + 1)...]
        while true {
            let comma = rest.firstIndex(of: UInt8(ascii: ",")) ?? rest.endIndex
            let member = trimmed(rest[..<comma])
            // Empty list elements are allowed (RFC 9110 §5.6.1).
            if !member.isEmpty {
                guard let spec = parseSpec(member) else { return nil }
                specs.append(spec)
            }
            guard comma < rest.endIndex else { break }
            rest = rest[(comma + 1)...]
        }
        return specs.isEmpty ? nil : specs
    }

    /// Without leading and trailing spaces and tabs.
    private static func trimmed(_ bytes: Bytes) -> Bytes {
        let isSpace = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }),
              let last = bytes.lastIndex(where: { !isSpace($0) }) else { return bytes[bytes.endIndex...] }
        return bytes[first...last]
    }

    private static func parseSpec(_ bytes: Bytes) -> ByteRangeSpec? {
        guard let dash = bytes.firstIndex(of: UInt8(ascii: "-")) else { return nil }
        let first = bytes[..<dash], last = bytes[(dash + 1)...]
        if first.isEmpty {
            guard let length = number(last) else { return nil }
            return .suffix(length: length)
        }
        guard let start = number(first) else { return nil }
        if last.isEmpty { return .from(first: start, last: nil) }
        guard let end = number(last), end >= start else { return nil }
        return .from(first: start, last: end)
    }

    private static func number(_ digits: Bytes) -> UInt64? {
        guard !digits.isEmpty, digits.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        var value: UInt64 = 0
        for digit in digits {
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(UInt64(digit - 0x30))
            if o1 || o2 { return .max }
            value = sum
        }
        return value
    }
}

/// A satisfiable byte range: `start...end`, both inclusive.
public struct ByteRange: Equatable, Sendable {
    /// First byte.
    public let start: UInt64
    /// Last byte (inclusive).
    public let end: UInt64

    /// Creates a range; `end >= start`.
    public init(start: UInt64, end: UInt64) {
        self.start = start
        self.end = end
    }

    /// Number of bytes.
    public var length: UInt64 { end - start + 1 }

    /// The `Content-Range` value for a representation of `size` bytes.
    public func contentRange(size: UInt64) -> String { "bytes \(start)-\(end)/\(size)" }
}

/// How to answer a GET given its Range header and the blob's size.
public enum RangePlan: Equatable, Sendable {
    /// 200 with the whole blob.
    case full
    /// 206 with one range.
    case single(ByteRange)
    /// 206 multipart/byteranges with these ranges (at least two, sorted, disjoint, not adjacent).
    case multiple([ByteRange])
    /// 416 with `Content-Range: bytes */size`.
    case unsatisfiable

    /// More ranges than this (after coalescing) are answered with the whole blob.
    public static let maxRanges = 64

    /// Plans the answer: drops unsatisfiable ranges, coalesces overlapping and adjacent ones,
    /// and sends the whole blob instead of anything that would amplify the response.
    public static func plan(_ specs: [ByteRangeSpec], size: UInt64) -> RangePlan {
        var ranges: [ByteRange] = []
        var requested: UInt64 = 0
        var wantsEmptySuffix = false
        for spec in specs {
            switch spec {
            case .from(let first, let last):
                guard first < size else { continue }
                let end = min(last ?? .max, size - 1)
                ranges.append(ByteRange(start: first, end: end))
            case .suffix(let length):
                guard length > 0 else { continue }
                guard size > 0 else {
                    wantsEmptySuffix = true  // satisfiable, but there is no byte to send
                    continue
                }
                ranges.append(ByteRange(start: size - min(length, size), end: size - 1))
            }
            let (sum, overflow) = requested.addingReportingOverflow(ranges.last?.length ?? 0)
            requested = overflow ? .max : sum
        }
        if ranges.isEmpty { return wantsEmptySuffix ? .full : .unsatisfiable }
        if requested > size { return .full }

        ranges.sort { $0.start < $1.start }
        var merged: [ByteRange] = []
        for range in ranges {
            if let last = merged.last, range.start <= last.end || range.start - last.end == 1 {
                merged[merged.count - 1] = ByteRange(start: last.start, end: max(last.end, range.end))
            } else {
                merged.append(range)
            }
        }
        if merged.count > maxRanges { return .full }
        return merged.count == 1 ? .single(merged[0]) : .multiple(merged)
    }
}

import BlobStore
import Foundation
import Testing
@testable import BlobAPIv1
@testable import HTTPCore

/// A small deterministic generator (SplitMix64), so failures reproduce.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite struct PropertyTests {
    static let iterations = 50_000

    /// HTTP-dates built by arithmetic against libc's gmtime_r and strftime, years 1 to 9999.
    @Test func httpDatesMatchLibc() {
        var random = SeededGenerator(state: 3)
        let samples = [0, -1, 86_399, 86_400, 951_782_400, 4_107_542_400, -62_135_596_800, 253_402_300_799]
            + (0..<Self.iterations).map { _ in Int64.random(in: -62_135_596_800...253_402_300_799, using: &random) }
        for seconds in samples {
            var value = time_t(seconds), fields = tm()
            gmtime_r(&value, &fields)
            // strftime's %Y does not pad years below 1000 on glibc; an HTTP-date's year is 4DIGIT
            // (RFC 9110 §5.6.7), so the year is formatted here and the rest comes from strftime.
            func strftime(_ format: String) -> String {
                var text = [CChar](repeating: 0, count: 64)
                Glibc.strftime(&text, text.count, format, &fields)
                return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
            let year = String(fields.tm_year + 1900)
            let expected = strftime("%a, %d %b ") + String(repeating: "0", count: max(0, 4 - year.count)) + year
                + strftime(" %H:%M:%S GMT")
            #expect(HTTPDate.format(seconds) == expected, "\(seconds)")
            #expect(HTTPDate.parse(HTTPDate.format(seconds)) == seconds, "\(seconds)")
        }
    }

    /// The digest field's base64 against Foundation's, for every length up to 64 bytes.
    @Test func base64MatchesFoundation() {
        var random = SeededGenerator(state: 4)
        for length in 0...64 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            #expect(DigestField.base64(bytes) == Data(bytes).base64EncodedString())
        }
    }

    /// Random Range headers against blobs of 0...40 bytes, checked against a byte-set oracle.
    @Test func rangePlansMatchAnOracle() {
        var random = SeededGenerator(state: 1)
        let pieces = ["bytes=", "0", "1", "5", "9", "39", "40", "99999999999999999999999", "-", ",", ", ", " ", "", "x", ";"]
        var plannedRanges = 0
        for _ in 0..<Self.iterations {
            let value: String
            if Int.random(in: 0..<10, using: &random) < 3 {
                // Arbitrary junk.
                let junk = (0..<Int.random(in: 1...10, using: &random)).map { _ in pieces.randomElement(using: &random) ?? "" }.joined()
                value = Bool.random(using: &random) ? "bytes=" + junk : junk
            } else {
                // Well-formed range sets of 1...80 specs, numbers around the blob sizes.
                let numbers = ["0", "1", "2", "5", "9", "20", "39", "40", "41", "99999999999999999999999"]
                let specs = (0..<Int.random(in: 1...(Bool.random(using: &random) ? 4 : 80), using: &random)).map { _ -> String in
                    let a = numbers.randomElement(using: &random) ?? "0", b = numbers.randomElement(using: &random) ?? "0"
                    switch Int.random(in: 0..<3, using: &random) {
                    case 0: return (UInt64(a) ?? .max) <= (UInt64(b) ?? .max) ? "\(a)-\(b)" : "\(b)-\(a)"
                    case 1: return "\(a)-"
                    default: return "-\(b)"
                    }
                }
                value = "bytes=" + specs.joined(separator: Bool.random(using: &random) ? "," : ", ")
            }
            let size = UInt64.random(in: 0...40, using: &random)
            guard let specs = ByteRangeSpec.parseHeader(value) else { continue }
            // Oracle: which bytes do the satisfiable specs ask for, and how many in total?
            var wanted = Set<UInt64>()
            var total: UInt64 = 0
            var emptySuffix = false
            for spec in specs {
                switch spec {
                case .from(let first, let last):
                    guard first < size else { continue }
                    let end = min(last ?? .max, size - 1)
                    wanted.formUnion(first...end)
                    total += end - first + 1
                case .suffix(let length):
                    guard length > 0 else { continue }
                    if size == 0 { emptySuffix = true; continue }
                    let start = size - min(length, size)
                    wanted.formUnion(start..<size)
                    total += size - start
                }
            }
            let plan = RangePlan.plan(specs, size: size)
            switch plan {
            case .unsatisfiable:
                #expect(wanted.isEmpty && !emptySuffix, "\(value) size \(size)")
            case .full:
                #expect(total > size || (wanted.isEmpty && emptySuffix), "\(value) size \(size)")
            case .single(let range):
                #expect(Set(range.start...range.end) == wanted, "\(value) size \(size)")
                plannedRanges += 1
            case .multiple(let ranges):
                #expect(ranges.count >= 2 && ranges.count <= RangePlan.maxRanges)
                for (a, b) in zip(ranges, ranges.dropFirst()) { #expect(b.start > a.end + 1, "sorted, disjoint, not adjacent") }
                #expect(Set(ranges.flatMap { Array($0.start...$0.end) }) == wanted, "\(value) size \(size)")
                plannedRanges += 1
            }
        }
        #expect(plannedRanges > Self.iterations / 10, "the generator reaches the interesting cases")
    }

    /// Random raw keys, checked against an independent statement of the key rules.
    @Test func keyValidationMatchesTheRules() {
        var random = SeededGenerator(state: 2)
        let pieces = ["a", "b", "/", ".", "..", "%2F", "%2f", "%00", "%0A", "%7F", "%", "%4", "%zz", "%C3%A9", "%C3", "%FF", "+", " ",
                      "é", "\u{1}", "%2E", "~", "€"]
        var accepted = 0
        for _ in 0..<Self.iterations {
            let raw = (0..<Int.random(in: 0...8, using: &random)).map { _ in pieces.randomElement(using: &random) ?? "" }.joined()
            let result = try? BlobService.key(ArraySlice(raw.utf8))
            let expected = Self.oracle(Array(raw.utf8))
            #expect(result?.bytes == expected, "\(raw.debugDescription)")
            if result != nil { accepted += 1 }
        }
        #expect(accepted > 1000 && accepted < Self.iterations - 1000, "both outcomes are exercised")
        // Long keys around the limit.
        #expect((try? BlobService.key(ArraySlice(String(repeating: "ab/", count: 341).utf8) + [0x7A])) != nil)
        #expect((try? BlobService.key(ArraySlice(String(repeating: "k", count: 2000).utf8))) == nil)
    }

    /// The key rules, restated: decode %XX strictly, then 1...1024 bytes of UTF-8 without
    /// control characters, and no empty, "." or ".." segment.
    static func oracle(_ raw: [UInt8]) -> [UInt8]? {
        // The path itself never has an empty segment: no leading, trailing or doubled `/`.
        let pathSegments = raw.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        guard !pathSegments.contains(where: \.isEmpty) else { return nil }
        var bytes: [UInt8] = []
        var i = 0
        while i < raw.count {
            if raw[i] == UInt8(ascii: "%") {
                guard i + 2 < raw.count + 0, i + 2 <= raw.count - 1,
                      let value = UInt8(String(decoding: raw[i + 1...i + 2], as: UTF8.self), radix: 16),
                      raw[i + 1...i + 2].allSatisfy({ $0 != UInt8(ascii: "+") && $0 != UInt8(ascii: "-") }) else { return nil }
                bytes.append(value)
                i += 3
            } else {
                bytes.append(raw[i])
                i += 1
            }
        }
        guard (1...1088).contains(bytes.count), String(validating: bytes, as: UTF8.self) != nil,
              !bytes.contains(where: { $0 < 0x20 || $0 == 0x7F }) else { return nil }
        // After decoding, segments may be empty (`%2F` makes them) but never `.` or `..`.
        let segments = bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).map { Array($0) }
        guard !segments.contains(where: { $0 == [0x2E] || $0 == [0x2E, 0x2E] }) else { return nil }
        return bytes
    }
}

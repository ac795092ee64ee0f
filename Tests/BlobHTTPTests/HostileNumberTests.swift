import Testing
@testable import BlobAPIv1
@testable import HTTPCore

/// The Range and tus parsers against the numbers a hostile client sends (issue 20, item 1):
/// edge values and seeded random inputs. They refuse or clamp; nothing traps.
@Suite struct HostileNumberTests {
    static let numbers = ["0", "1", "9223372036854775807", "9223372036854775808", "18446744073709551614", "18446744073709551615",
                          "18446744073709551616", String(repeating: "9", count: 60), String(repeating: "0", count: 30) + "1"]
    static let sizes: [UInt64] = [0, 1, 2, 1000, UInt64(Int64.max), UInt64(Int64.max) + 1, .max - 1, .max]

    /// Every plan of every parsed Range is within the blob, whatever the numbers.
    static func checkPlan(_ header: String, size: UInt64) {
        guard let specs = ByteRangeSpec.parseHeader(header) else { return }
        switch RangePlan.plan(specs, size: size) {
        case .single(let range):
            #expect(range.start <= range.end && range.end < size && range.length <= size, "\(header) of \(size)")
            _ = range.contentRange(size: size)
        case .multiple(let ranges):
            #expect(ranges.count >= 2 && ranges.count <= RangePlan.maxRanges)
            #expect(zip(ranges, ranges.dropFirst()).allSatisfy { $0.end + 1 < $1.start } && ranges.allSatisfy { $0.end < size })
        case .full, .unsatisfiable:
            break
        }
    }

    @Test func rangeEdgeNumbers() {
        for a in Self.numbers {
            for b in Self.numbers {
                for size in Self.sizes {
                    for header in ["bytes=\(a)-\(b)", "bytes=\(a)-", "bytes=-\(a)", "bytes=\(a)-\(b), -\(b), \(b)-", "bytes=0-0,\(a)-\(b)"] {
                        Self.checkPlan(header, size: size)
                    }
                }
            }
        }
        #expect(ByteRangeSpec.parseHeader("bytes=18446744073709551616-") == [.from(first: .max, last: nil)])
        #expect(RangePlan.plan([.from(first: 0, last: .max)], size: .max) == .single(ByteRange(start: 0, end: .max - 1)))
        #expect(RangePlan.plan([.suffix(length: .max)], size: .max) == .single(ByteRange(start: 0, end: .max - 1)))
    }

    @Test func rangeRandomHeaders() {
        var random = SeededGenerator(state: 11)
        let pieces = Self.numbers + ["-", ",", " ", "bytes=", "=", "\t", "a"]
        for _ in 0..<20_000 {
            let header = "bytes=" + (0..<Int.random(in: 1...8, using: &random)).map { _ in pieces.randomElement(using: &random) ?? "" }.joined()
            Self.checkPlan(header, size: Self.sizes.randomElement(using: &random) ?? 0)
        }
    }

    @Test func tusNumbers() throws {
        #expect(try TusHeaders.number("0", "Upload-Offset") == 0)
        #expect(try TusHeaders.number("9223372036854775807", "Upload-Length") == UInt64(Int64.max))
        #expect(try TusHeaders.number("000000000000000000000000000000042", "Upload-Length") == 42)
        for text in ["9223372036854775808", "18446744073709551615", "18446744073709551616", String(repeating: "9", count: 60),
                     "", "+1", "-1", "-0", " 1", "1 ", "1e3", "0x10", "１"] {
            #expect(throws: HTTPError.self, "\(text)") { try TusHeaders.number(text, "Upload-Length") }
        }
        var random = SeededGenerator(state: 7)
        for _ in 0..<20_000 {
            let text = String((0..<Int.random(in: 0...25, using: &random)).map { _ in Array("0123456789+- ").randomElement(using: &random) ?? "0" })
            if let value = try? TusHeaders.number(text, "Upload-Offset") {
                #expect(value <= UInt64(Int64.max) && String(value) == Self.withoutLeadingZeros(text))
            }
        }
    }

    static func withoutLeadingZeros(_ text: String) -> String {
        let digits = String(text.drop { $0 == "0" })
        return digits.isEmpty ? "0" : digits
    }

    @Test func tusMetadataAndChecksumNeverTrap() {
        var random = SeededGenerator(state: 8)
        let alphabet = Array("key a,b= ,,sha1 sha256 YWJj AAAA====\t\u{0}é")
        for _ in 0..<20_000 {
            let text = String((0..<Int.random(in: 0...40, using: &random)).map { _ in alphabet.randomElement(using: &random) ?? " " })
            _ = try? TusHeaders.metadata(text)
            _ = try? TusHeaders.checksum(text)
        }
    }
}

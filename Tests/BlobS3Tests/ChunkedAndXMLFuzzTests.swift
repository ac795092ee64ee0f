import BlobStore
import Foundation
import Testing
@testable import BlobS3

/// A seeded generator (SplitMix64): every run feeds the same inputs, so a failure reproduces.
struct S3FuzzRandom: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The numbers a hostile client sends, as text.
private let edgeNumbers = ["0", "1", "9223372036854775807", "9223372036854775808", "18446744073709551615", "18446744073709551616",
                   String(repeating: "9", count: 60), "+1", "-1", "", " 1", "1 ", "0x10", "1e3", "１"]

/// The aws-chunked decoder against sizes no client should send, and against seeded random and
/// mutated bodies fed in random pieces: it answers 400 (403 for a signature) and never traps.
@Suite struct AWSChunkedFuzzTests {
    /// Decodes `body` fed in the given pieces; the error is nil when it decoded completely.
    static func decode(_ body: [UInt8], declared: UInt64?, trailer: Bool = true, cuts: [Int] = []) -> (decoded: [UInt8], error: S3Error?, complete: Bool) {
        var out: [UInt8] = []
        let decoder = AWSChunkedDecoder(signing: nil, hasTrailer: trailer, declaredLength: declared) { out += $0 }
        var start = 0
        do {
            for end in cuts.sorted() + [body.count] where end >= start && end <= body.count {
                try body[start..<end].withUnsafeBytes { try decoder.feed($0) }
                start = end
            }
        } catch let error as S3Error {
            #expect(decoder.decodedLength <= declared ?? .max)
            return (out, error, false)
        } catch {
            Issue.record("not an S3Error: \(error)")
        }
        #expect(decoder.decodedLength == UInt64(out.count))
        return (out, nil, decoder.isComplete)
    }

    /// Issue 20's reproduction: 1 byte, then a chunk of 2^64-1 bytes against a declared 10.
    @Test func issueReproductionIsA400() {
        let result = Self.decode(Array("1\r\nX\r\nffffffffffffffff\r\n".utf8), declared: 10)
        #expect(result.error?.code == .invalidRequest)
        #expect(result.error?.code.status == 400)
        #expect(result.decoded == Array("X".utf8))
    }

    @Test func edgeSizesAreRefusedOrBounded() {
        let sizes = ["0", "1", "a", "A", "f", "ffffffffffffffff", "fffffffffffffffe", "8000000000000000", "7fffffffffffffff",
                     "10000000000000000", "0000000000000001", "00000000000000001", String(repeating: "f", count: 100),
                     "+1", "-1", "-0", " 1", "1 ", "", "g", "0x1", "１", "1;chunk-signature=", ";"]
        let declared: [UInt64?] = [nil, 0, 1, 10, UInt64(Int64.max), UInt64(Int64.max) + 1, .max]
        for size in sizes {
            for length in declared {
                for prefix in ["", "1\r\nX\r\n", "ffffffffffffffff\r\n"] {
                    let result = Self.decode(Array((prefix + size + "\r\nYY\r\n0\r\n\r\n").utf8), declared: length)
                    if let error = result.error { #expect(error.code.status == 400, "\(size) \(String(describing: length)): \(error)") }
                    #expect(UInt64(result.decoded.count) <= length ?? .max)
                }
            }
        }
    }

    /// Random well-formed bodies decode to their bytes, however they are cut.
    @Test func randomBodiesRoundTrip() {
        var random = S3FuzzRandom(seed: 20)
        for _ in 0..<500 {
            let chunks = (0..<Int.random(in: 0...5, using: &random)).map { _ in
                (0..<Int.random(in: 1...300, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            }
            let whole = chunks.flatMap { $0 }
            var body: [UInt8] = []
            for chunk in chunks { body += Array("\(String(chunk.count, radix: 16))\r\n".utf8) + chunk + Array("\r\n".utf8) }
            let trailer = Bool.random(using: &random)
            body += Array(("0\r\n" + (trailer ? "x-amz-checksum-crc32:AAAAAA==\r\n" : "") + "\r\n").utf8)
            let cuts = (0..<Int.random(in: 0...6, using: &random)).map { _ in Int.random(in: 0...body.count, using: &random) }
            let result = Self.decode(body, declared: UInt64(whole.count), cuts: cuts)
            #expect(result.error == nil && result.complete && result.decoded == whole)
        }
    }

    /// Mutated bodies (bytes replaced, hex runs and edge numbers spliced in) never trap.
    @Test func mutatedBodiesNeverTrap() {
        var random = S3FuzzRandom(seed: 2026)
        let alphabet = Array("0123456789abcdefABCDEF\r\n;=-+ xX:".utf8) + [0x00, 0xFF]
        let seedBody = Array("5\r\nhello\r\n3;chunk-signature=ab\r\nabc\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n".utf8)
        let splices = ["ffffffffffffffff", "10000000000000000", String(repeating: "f", count: 40), "7fffffffffffffff"] + edgeNumbers
        for _ in 0..<3000 {
            var body = seedBody
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                let at = Int.random(in: 0..<body.count, using: &random)
                if Bool.random(using: &random) {
                    body[at] = alphabet.randomElement(using: &random) ?? 0
                } else {
                    body.replaceSubrange(at..<at, with: Array((splices.randomElement(using: &random) ?? "").utf8))
                }
            }
            let declared: UInt64? = [nil, 0, 8, 100, UInt64(Int64.max) + 1, .max].randomElement(using: &random) ?? nil
            let cuts = (0..<Int.random(in: 0...4, using: &random)).map { _ in Int.random(in: 0...body.count, using: &random) }
            let result = Self.decode(body, declared: declared, trailer: Bool.random(using: &random), cuts: cuts)
            if let error = result.error { #expect(error.code.status == 400, "\(error)") }
        }
    }
}

/// XML bodies are read in one pass whatever they hold (issue 20, item 4), with their element
/// counts capped.
@Suite struct XMLReaderTests {
    static func completeBody(parts: Int) -> [UInt8] {
        var xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        for number in 1...parts { xml += "<Part><PartNumber>\(number)</PartNumber><ETag>\"\(String(repeating: "0", count: 32))\"</ETag></Part>" }
        return Array((xml + "</CompleteMultipartUpload>").utf8)
    }

    /// 1 MiB of `<Part ` took about 12 minutes before: each `<Part` searched to the end of the
    /// body for a `>`. Now it is one pass, and MalformedXML.
    @Test(.timeLimit(.minutes(1))) func repeatedOpenTagsAreMalformedInOnePass() {
        for unit in ["<Part ", "<Part", "<Part a=\"", "<!--", "<Part>&amp"] {
            let body = Array(String(repeating: unit, count: (1 << 20) / unit.utf8.count).utf8)
            #expect(throws: XMLReader.malformed, "\(unit)") { try S3Service.partList(Array("<CompleteMultipartUpload>".utf8) + body) }
        }
    }

    @Test func completeTakesAtMost10000Parts() throws {
        #expect(try S3Service.partList(Self.completeBody(parts: 10_000)).count == 10_000)
        #expect(throws: XMLReader.malformed) { try S3Service.partList(Self.completeBody(parts: 10_001)) }
    }

    @Test func wellFormedBodiesParseHoweverTheyAreCut() throws {
        let body = Array("""
            <?xml version="1.0" encoding="UTF-8"?>
            <!-- a comment with <tags> in it -->
            <s3:CompleteMultipartUpload xmlns:s3="http://s3.amazonaws.com/doc/2006-03-01/" note='a > b'>
              <s3:Part><PartNumber> 2 </PartNumber><ETag>&quot;0123456789abcdef0123456789ABCDEF&quot;</ETag>
                <ChecksumCRC32><![CDATA[AAAA]]>AA==</ChecksumCRC32></s3:Part>
              <Part><PartNumber>3</PartNumber><ETag>&#x22;0123456789abcdef0123456789abcdef&#34;</ETag><Other/></Part>
            </s3:CompleteMultipartUpload>

            """.utf8)
        let parts = try S3Service.partList(body)
        #expect(parts.map(\.number) == [2, 3])
        #expect(parts.map(\.checksum) == ["AAAAAA==", nil])
        var random = S3FuzzRandom(seed: 4)
        for _ in 0..<300 {
            var reader = XMLReader(maxElements: 100)
            var events: [String] = []
            let handle: XMLReader.Handler = { event, path in events.append("\(event) \(path)") }
            var cuts = (0..<Int.random(in: 0...8, using: &random)).map { _ in Int.random(in: 0...body.count, using: &random) }.sorted()
            cuts.append(body.count)
            var start = 0
            for end in cuts {
                try body[start..<end].withUnsafeBytes { try reader.feed($0, handle) }
                start = end
            }
            try reader.finish(handle)
            #expect(events.filter { $0.hasPrefix("start") }.count == 9)
            #expect(events.contains("text(\"AAAA\") [\"CompleteMultipartUpload\", \"Part\", \"ChecksumCRC32\"]"))
        }
    }

    @Test func malformedBodiesAreRefused() {
        let bodies = ["", "<a>", "<a></b>", "<a></a><b></b>", "<a></a>text", "text<a></a>", "<!DOCTYPE a><a/>",
                      "<!DOCTYPE a [<!ENTITY x \"y\">]><a>&x;</a>", "<a>&unknown;</a>", "<a>&#0;</a>", "<a>&#x110000;</a>",
                      "<a>&#-1;</a>", "<a>& b</a>", "<a><</a>", "<>", "</a>", "<a></a >x",
                      String(repeating: "<a>", count: 9) + String(repeating: "</a>", count: 9)]
        for body in bodies {
            #expect(throws: XMLReader.malformed, "\(body)") { try XML.parse(Array(body.utf8), maxChildren: 10) }
        }
        #expect(throws: XMLReader.malformed) { try XML.parse([0x3C, 0x61, 0x3E, 0xFF, 0x3C, 0x2F, 0x61, 0x3E], maxChildren: 10) }
    }

    /// Random mutations of a good body: MalformedXML or a parse, never a trap.
    @Test func mutatedBodiesNeverTrap() {
        var random = S3FuzzRandom(seed: 99)
        let good = Self.completeBody(parts: 3)
        let alphabet = Array("<>/&;#x\"'![]-? =CDATAPart".utf8) + [0x00, 0xFF]
        for _ in 0..<3000 {
            var body = good
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                body[Int.random(in: 0..<body.count, using: &random)] = alphabet.randomElement(using: &random) ?? 0
            }
            do {
                _ = try S3Service.partList(body)
            } catch let error as S3Error {
                #expect(error.code.status == 400)
            } catch {
                #expect(error is StoreError)
            }
        }
    }
}

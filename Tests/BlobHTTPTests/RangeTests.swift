import Testing
@testable import BlobAPIv1
@testable import HTTPCore

@Suite struct RangeParserTests {
    @Test func parsesEveryForm() {
        #expect(ByteRangeSpec.parseHeader("bytes=0-499") == [.from(first: 0, last: 499)])
        #expect(ByteRangeSpec.parseHeader("bytes=500-") == [.from(first: 500, last: nil)])
        #expect(ByteRangeSpec.parseHeader("bytes=-500") == [.suffix(length: 500)])
        #expect(ByteRangeSpec.parseHeader("bytes=0-0, -1 ,5-") == [.from(first: 0, last: 0), .suffix(length: 1), .from(first: 5, last: nil)])
        #expect(ByteRangeSpec.parseHeader("Bytes=1-2") == [.from(first: 1, last: 2)])
        #expect(ByteRangeSpec.parseHeader("bytes=1-2,,3-4") == [.from(first: 1, last: 2), .from(first: 3, last: 4)])
    }

    @Test(arguments: ["", "bytes", "bytes=", "bytes=,", "items=0-1", "bytes=a-b", "bytes=5-1", "bytes=-", "bytes=1",
                      "bytes=0-1;x", "bytes= 0 - 1", "bytes=--1", "bytes=+1-2", "bytes=0x1-2", "bytes 0-1"])
    func rejectsMalformed(_ value: String) {
        #expect(ByteRangeSpec.parseHeader(value) == nil)
    }

    @Test func saturatesNumbersBeyond64Bits() {
        #expect(ByteRangeSpec.parseHeader("bytes=0-99999999999999999999999") == [.from(first: 0, last: .max)])
        #expect(ByteRangeSpec.parseHeader("bytes=99999999999999999999999-") == [.from(first: .max, last: nil)])
        #expect(ByteRangeSpec.parseHeader("bytes=-99999999999999999999999") == [.suffix(length: .max)])
    }
}

@Suite struct RangePlannerTests {
    func plan(_ header: String, size: UInt64) -> RangePlan? {
        ByteRangeSpec.parseHeader(header).map { RangePlan.plan($0, size: size) }
    }

    @Test func singleRanges() {
        #expect(plan("bytes=0-9", size: 100) == .single(ByteRange(start: 0, end: 9)))
        #expect(plan("bytes=90-200", size: 100) == .single(ByteRange(start: 90, end: 99)))
        #expect(plan("bytes=-10", size: 100) == .single(ByteRange(start: 90, end: 99)))
        #expect(plan("bytes=-1000", size: 100) == .single(ByteRange(start: 0, end: 99)))
        #expect(plan("bytes=99-", size: 100) == .single(ByteRange(start: 99, end: 99)))
        #expect(plan("bytes=0-99999999999999999999999", size: 100) == .single(ByteRange(start: 0, end: 99)))
    }

    @Test func unsatisfiable() {
        #expect(plan("bytes=100-", size: 100) == .unsatisfiable)
        #expect(plan("bytes=100-200", size: 100) == .unsatisfiable)
        #expect(plan("bytes=-0", size: 100) == .unsatisfiable)
        #expect(plan("bytes=99999999999999999999999-", size: 100) == .unsatisfiable)
        #expect(plan("bytes=0-0", size: 0) == .unsatisfiable)
        #expect(plan("bytes=0-", size: 0) == .unsatisfiable)
    }

    @Test func suffixOfEmptyBlobIsTheWholeEmptyBlob() {
        #expect(plan("bytes=-5", size: 0) == .full)
    }

    @Test func dropsUnsatisfiableMembers() {
        #expect(plan("bytes=200-300,0-4", size: 100) == .single(ByteRange(start: 0, end: 4)))
    }

    @Test func coalescesOverlappingAndAdjacent() {
        #expect(plan("bytes=0-4,5-9", size: 100) == .single(ByteRange(start: 0, end: 9)))
        #expect(plan("bytes=0-4,2-6", size: 100) == .single(ByteRange(start: 0, end: 6)))
        #expect(plan("bytes=20-29,0-4,6-9", size: 100) == .multiple([
            ByteRange(start: 0, end: 4), ByteRange(start: 6, end: 9), ByteRange(start: 20, end: 29),
        ]))
    }

    @Test func neverAmplifies() {
        // Ranges adding up to more than the blob: the whole blob instead.
        #expect(plan("bytes=0-,0-", size: 100) == .full)
        #expect(plan("bytes=0-99,0-99", size: 100) == .full)
        // More than 64 ranges after coalescing: the whole blob.
        let many = (0..<65).map { "\($0 * 2)-\($0 * 2)" }.joined(separator: ",")
        #expect(plan("bytes=" + many, size: 1000) == .full)
        let sixtyFour = (0..<64).map { "\($0 * 2)-\($0 * 2)" }.joined(separator: ",")
        guard case .multiple(let ranges) = plan("bytes=" + sixtyFour, size: 1000) else {
            Issue.record("64 ranges should be served as multipart")
            return
        }
        #expect(ranges.count == 64)
        // Thousands of adjacent one-byte ranges coalesce into one.
        let adjacent = (0..<5000).map { "\($0)-\($0)" }.joined(separator: ",")
        #expect(plan("bytes=" + adjacent, size: 5000) == .single(ByteRange(start: 0, end: 4999)))
    }

    @Test func contentRange() {
        #expect(ByteRange(start: 0, end: 9).contentRange(size: 100) == "bytes 0-9/100")
        #expect(ByteRange(start: 5, end: 5).length == 1)
    }
}

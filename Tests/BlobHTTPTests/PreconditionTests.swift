import BlobStore
import MicroHTTPD
import Testing
@testable import BlobAPIv1
@testable import HTTPCore

@Suite struct PreconditionTests {
    let current = BlobRecord(key: try! BlobKey("k"), version: "v1", size: 1, sha256: [UInt8](repeating: 0, count: 32),
                             contentType: "text/plain", modified: 1_000_000)

    func evaluate(_ headers: [(String, String)], current: BlobRecord?, safe: Bool = true) -> Preconditions.Outcome {
        let head = HTTPRequestHead(method: safe ? "GET" : "PUT", path: Array("/v1/blobs/k".utf8),
                                   headers: headers.map { (name: $0.0, value: $0.1) })
        return Preconditions(head).evaluate(current: current, safe: safe)
    }

    @Test func ifMatch() {
        #expect(evaluate([("If-Match", "\"v1\"")], current: current) == .proceed)
        #expect(evaluate([("If-Match", "\"v0\", \"v1\"")], current: current) == .proceed)
        #expect(evaluate([("If-Match", "\"v0\"")], current: current) == .failed)
        #expect(evaluate([("If-Match", "W/\"v1\"")], current: current) == .failed, "If-Match uses strong comparison")
        #expect(evaluate([("If-Match", "*")], current: current) == .proceed)
        #expect(evaluate([("If-Match", "*")], current: nil, safe: false) == .failed)
        #expect(evaluate([("If-Match", "\"v1\"")], current: nil, safe: false) == .failed)
    }

    @Test func ifNoneMatch() {
        #expect(evaluate([("If-None-Match", "\"v1\"")], current: current) == .notModified)
        #expect(evaluate([("If-None-Match", "W/\"v1\"")], current: current) == .notModified, "weak comparison")
        #expect(evaluate([("If-None-Match", "\"v2\"")], current: current) == .proceed)
        #expect(evaluate([("If-None-Match", "*")], current: current) == .notModified)
        #expect(evaluate([("If-None-Match", "*")], current: current, safe: false) == .failed)
        #expect(evaluate([("If-None-Match", "*")], current: nil, safe: false) == .proceed)
        #expect(evaluate([("If-None-Match", "\"v1\"")], current: current, safe: false) == .failed)
    }

    @Test func dates() {
        let before = HTTPDate.format(999_999), same = HTTPDate.format(1_000_000), after = HTTPDate.format(1_000_001)
        #expect(evaluate([("If-Modified-Since", same)], current: current) == .notModified)
        #expect(evaluate([("If-Modified-Since", after)], current: current) == .notModified)
        #expect(evaluate([("If-Modified-Since", before)], current: current) == .proceed)
        #expect(evaluate([("If-Modified-Since", before)], current: current, safe: false) == .proceed, "IMS only for GET/HEAD")
        #expect(evaluate([("If-Unmodified-Since", before)], current: current) == .failed)
        #expect(evaluate([("If-Unmodified-Since", same)], current: current) == .proceed)
        #expect(evaluate([("If-Modified-Since", "not a date")], current: current) == .proceed, "invalid dates are ignored")
        #expect(evaluate([("If-Unmodified-Since", "yesterday")], current: current) == .proceed)
    }

    @Test func rfc9110Order() {
        let before = HTTPDate.format(999_999), after = HTTPDate.format(1_000_001)
        // If-Match wins over If-Unmodified-Since (step 2 is skipped when If-Match is present).
        #expect(evaluate([("If-Match", "\"v1\""), ("If-Unmodified-Since", before)], current: current) == .proceed)
        // If-None-Match wins over If-Modified-Since (step 4 is skipped).
        #expect(evaluate([("If-None-Match", "\"other\""), ("If-Modified-Since", after)], current: current) == .proceed)
        // A failing If-Match is a 412 even when If-None-Match would say 304.
        #expect(evaluate([("If-Match", "\"v0\""), ("If-None-Match", "\"v1\"")], current: current) == .failed)
        // If-Unmodified-Since fails before If-None-Match is considered.
        #expect(evaluate([("If-Unmodified-Since", before), ("If-None-Match", "\"v1\"")], current: current) == .failed)
    }
}

@Suite struct HTTPDateTests {
    @Test func formatsIMFFixdate() {
        #expect(HTTPDate.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.formatRFC3339(784_111_777) == "1994-11-06T08:49:37Z")
    }

    @Test func parsesAllThreeForms() {
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == 784_111_777)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == 784_111_777)
    }

    @Test(arguments: ["", "0", "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 31 Feb 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:49:37 GMT",
                      "Sun, 6 Nov 1994 08:49:37 GMT", "Xyz, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT",
                      "1994-11-06T08:49:37Z", "Sun, 06 Nov 1994 08:49 GMT"])
    func rejectsInvalidDates(_ text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }
}

@Suite struct EntityTagTests {
    @Test func parsesLists() {
        #expect(EntityTagCondition.parse(["\"a\", W/\"b\""]) == .tags([EntityTag(opaque: "a"), EntityTag(weak: true, opaque: "b")]))
        #expect(EntityTagCondition.parse(["*"]) == .any)
        #expect(EntityTagCondition.parse([]) == nil)
        #expect(EntityTagCondition.parse(["bogus"]) == .tags([]))
    }
}

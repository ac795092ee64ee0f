import BlobStore
import MicroHTTPD
import Testing
@testable import HTTPCore

/// The conditional headers of a write become the `WriteCondition` the catalog evaluates, and
/// it decides as RFC 9110's evaluation of those headers does for a PUT or DELETE.
@Suite struct WriteConditionHeaderTests {
    static let current = BlobRecord(key: try! BlobKey("k"), version: "v1", size: 1, sha256: [UInt8](repeating: 0xCD, count: 32),
                                    contentType: "text/plain", modified: 1_000_000)
    static let before = "Mon, 12 Jan 1970 13:46:39 GMT"  // 999_999
    static let after = "Mon, 12 Jan 1970 13:46:41 GMT"   // 1_000_001

    static let headerSets: [[(String, String)]] = [
        [], [("If-Match", "*")], [("If-Match", "\"v1\"")], [("If-Match", "\"v0\", \"v1\"")], [("If-Match", "W/\"v1\"")],
        [("If-Match", "\"v2\"")], [("If-None-Match", "*")], [("If-None-Match", "\"v1\"")], [("If-None-Match", "W/\"v1\"")],
        [("If-None-Match", "\"v2\"")], [("If-Unmodified-Since", before)], [("If-Unmodified-Since", after)],
        [("If-Match", "\"v1\""), ("If-Unmodified-Since", before)], [("If-Modified-Since", after)],
        [("If-Match", "*"), ("If-None-Match", "\"v1\"")],
    ]

    static func head(_ headers: [(String, String)]) -> HTTPRequestHead {
        HTTPRequestHead(method: "PUT", path: Array("/v1/blobs/k".utf8), headers: headers.map { (name: $0.0, value: $0.1) })
    }

    @Test(arguments: 0..<headerSets.count) func agreesWithTheHeaders(_ index: Int) {
        let preconditions = Preconditions(Self.head(Self.headerSets[index]))
        for current in [Self.current, nil] {
            let expected = preconditions.evaluate(current: current, safe: false) == .proceed
            #expect(preconditions.writeCondition().holds(for: current) == expected, "\(Self.headerSets[index]) on \(String(describing: current?.version))")
        }
    }

    /// The headers as data: tags with their weakness, `*`, the date; If-Modified-Since has no say.
    @Test func headersBecomeData() {
        let condition = Preconditions(Self.head([("If-Match", "\"a\", W/\"b\""), ("If-None-Match", "*"),
                                                  ("If-Unmodified-Since", Self.before), ("If-Modified-Since", Self.after)]))
            .writeCondition(.content)
        #expect(condition == WriteCondition(ifMatch: .tags([.init("a"), .init("b", weak: true)]), ifNoneMatch: .any,
                                            ifUnmodifiedSince: 999_999, scheme: .content))
        #expect(Preconditions(Self.head([("If-Modified-Since", Self.after)])).writeCondition() == .always)
    }
}

import BlobCore
import Testing

/// `WriteCondition.holds(for:)`, the one evaluator every catalog calls inside its transaction:
/// every kind of condition against a present record and against none.
@Suite struct WriteConditionTests {
    /// The record the key holds: version `v1`, modified at 1000, no MD5.
    static let current = BlobRecord(key: try! BlobKey("k"), version: "v1", size: 3, sha256: Array(repeating: 0xAB, count: 32),
                                    contentType: "text/plain", modified: 1000)

    /// A condition, and whether it holds when the key holds `current` and when it holds nothing.
    struct Case: Sendable, CustomTestStringConvertible {
        let condition: WriteCondition
        let present: Bool
        let absent: Bool
        var testDescription: String { "\(condition)" }
    }

    static let cases: [Case] = [
        Case(condition: .always, present: true, absent: true),
        Case(condition: .createOnly, present: false, absent: true),
        Case(condition: WriteCondition(ifMatch: .any), present: true, absent: false),
        Case(condition: WriteCondition(ifMatch: .tags([.init("v1")])), present: true, absent: false),
        Case(condition: WriteCondition(ifMatch: .tags([.init("v0"), .init("v1")])), present: true, absent: false),
        Case(condition: WriteCondition(ifMatch: .tags([.init("v2")])), present: false, absent: false),
        // If-Match compares strongly: a weak tag never matches.
        Case(condition: WriteCondition(ifMatch: .tags([.init("v1", weak: true)])), present: false, absent: false),
        Case(condition: WriteCondition(ifMatch: .tags([])), present: false, absent: false),
        Case(condition: .version("v1"), present: true, absent: false),
        Case(condition: .version("v2"), present: false, absent: false),
        Case(condition: WriteCondition(ifNoneMatch: .tags([.init("v1")])), present: false, absent: true),
        // If-None-Match compares weakly: a weak tag of the version matches.
        Case(condition: WriteCondition(ifNoneMatch: .tags([.init("v1", weak: true)])), present: false, absent: true),
        Case(condition: WriteCondition(ifNoneMatch: .tags([.init("v2")])), present: true, absent: true),
        Case(condition: WriteCondition(ifUnmodifiedSince: 999), present: false, absent: true),
        Case(condition: WriteCondition(ifUnmodifiedSince: 1000), present: true, absent: true),
        Case(condition: WriteCondition(ifUnmodifiedSince: 1001), present: true, absent: true),
        // If-Unmodified-Since is ignored when If-Match is present (RFC 9110 §13.2.2).
        Case(condition: WriteCondition(ifMatch: .tags([.init("v1")]), ifUnmodifiedSince: 999), present: true, absent: false),
        Case(condition: WriteCondition(ifMatch: .any, ifNoneMatch: .tags([.init("v1")])), present: false, absent: false),
        Case(condition: WriteCondition(ifMatch: .any, ifNoneMatch: .tags([.init("v2")])), present: true, absent: false),
        // With content tags, the version is not the tag: the SHA-256's hex is (no MD5 here).
        Case(condition: WriteCondition(ifMatch: .tags([.init("v1")]), scheme: .content), present: false, absent: false),
        Case(condition: WriteCondition(ifMatch: .tags([.init(String(repeating: "ab", count: 32))]), scheme: .content),
             present: true, absent: false),
        Case(condition: WriteCondition(ifNoneMatch: .any, scheme: .content), present: false, absent: true),
        // S3's conditional deletes: the exact modification time and size, and a record must exist.
        Case(condition: WriteCondition(ifModifiedAt: 1000), present: true, absent: false),
        Case(condition: WriteCondition(ifModifiedAt: 999), present: false, absent: false),
        Case(condition: WriteCondition(ifModifiedAt: 1001), present: false, absent: false),
        Case(condition: WriteCondition(ifSize: 3), present: true, absent: false),
        Case(condition: WriteCondition(ifSize: 4), present: false, absent: false),
        Case(condition: WriteCondition(ifMatch: .any, ifModifiedAt: 1000, ifSize: 3), present: true, absent: false),
        Case(condition: WriteCondition(ifMatch: .tags([.init("v1")]), ifModifiedAt: 1000, ifSize: 2), present: false, absent: false),
        Case(condition: WriteCondition(ifMatch: .tags([.init("v2")]), ifModifiedAt: 1000, ifSize: 3), present: false, absent: false),
    ]

    @Test(arguments: cases) func holds(_ test: Case) {
        #expect(test.condition.holds(for: Self.current) == test.present)
        #expect(test.condition.holds(for: nil) == test.absent)
    }

    /// S3's entity tag: the MD5's hex, with `-PARTS` for a multipart object; /v1's is the version.
    @Test func tagSchemes() throws {
        var record = Self.current
        #expect(WriteCondition.TagScheme.version.tag(of: record) == "v1")
        #expect(WriteCondition.TagScheme.content.tag(of: record) == String(repeating: "ab", count: 32))
        record.md5 = Array(repeating: 0x01, count: 16)
        #expect(WriteCondition.TagScheme.content.tag(of: record) == String(repeating: "01", count: 16))
        record.parts = 3
        #expect(WriteCondition.TagScheme.content.tag(of: record) == String(repeating: "01", count: 16) + "-3")
        let condition = WriteCondition(ifMatch: .tags([.init(String(repeating: "01", count: 16) + "-3")]), scheme: .content)
        #expect(condition.holds(for: record))
        #expect(!condition.holds(for: Self.current))
    }

    /// A condition prints as the headers it stands for.
    @Test func description() {
        #expect("\(WriteCondition.always)" == "always")
        #expect("\(WriteCondition.createOnly)" == "If-None-Match: *")
        #expect("\(WriteCondition(ifMatch: .tags([.init("a"), .init("b", weak: true)]), ifUnmodifiedSince: 5, scheme: .content))"
                == "If-Match: \"a\", W/\"b\", If-Unmodified-Since: 5 (content tags)")
    }
}

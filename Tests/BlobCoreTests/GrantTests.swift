import BlobCore
import Testing

/// `Grant` parsing and `Grants`, the one evaluator of grants for every dialect: each pattern
/// kind against keys inside and outside it, listings, buckets, and the write allowance.
@Suite struct GrantTests {
    static func grants(_ text: String) throws -> Grants { try Grants(parsing: text) }
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func parsesEveryPatternKind() throws {
        #expect(try Grant(parsing: "read") == Grant(.read))
        #expect(try Grant(parsing: "read:*") == Grant(.read))
        #expect(try Grant(parsing: "write:photos") == Grant(.write, .bucket("photos")))
        #expect(try Grant(parsing: "create:backup/repo/*") == Grant(.create, .prefix(Self.bytes("backup/repo/"))))
        #expect(try Grant(parsing: "delete:backup/repo/locks/*") == Grant(.delete, .prefix(Self.bytes("backup/repo/locks/"))))
        #expect(try Grant(parsing: "share:b/a b/ü.txt") == Grant(.share, .key(Self.bytes("b/a b/ü.txt"))))
        #expect(try Grant(parsing: "admin:b/x*").description == "admin:b/x*")
        #expect(try Grants(parsing: "read,write,delete") == Grants([Grant(.read), Grant(.write), Grant(.delete)]))
    }

    @Test(arguments: ["", "fly", "read:", "read:*x", "read:b/*/c*", "read:b*", "read:/k", "read:b/../k", "read:b/\u{1}",
                      "read,,write", "READ"])
    func refusesMalformedGrants(_ text: String) {
        #expect(throws: Grant.ParseError.self) { try Grants(parsing: text) }
    }

    @Test func keysInsideAndOutsideEachPattern() throws {
        let g = try Self.grants("read:photos,write:docs/team/*,delete:docs/one.txt")
        #expect(g.allows(.read, key: Self.bytes("photos/a.jpg")))
        #expect(g.allows(.read, key: Self.bytes("photos/dir/")))
        #expect(!g.allows(.read, key: Self.bytes("photosx/a.jpg")), "a bucket pattern is a whole segment")
        #expect(!g.allows(.read, key: Self.bytes("photos")), "the bucket name alone is no key of it")
        #expect(!g.allows(.write, key: Self.bytes("photos/a.jpg")))
        #expect(g.allows(.write, key: Self.bytes("docs/team/x")))
        #expect(g.allows(.write, key: Self.bytes("docs/team/")))
        #expect(!g.allows(.write, key: Self.bytes("docs/teams")))
        #expect(g.allows(.delete, key: Self.bytes("docs/one.txt")))
        #expect(!g.allows(.delete, key: Self.bytes("docs/one.txt2")))
        #expect(!Grants.none.allows(.read, key: Self.bytes("a/b")))
        #expect(Grants.everything.allows(.admin, key: Self.bytes("a/b")))
    }

    @Test func bytePrefixesAreBytes() throws {
        let g = try Self.grants("read:b/\u{FF}*,read:b/é*")
        #expect(g.allows(.read, key: Self.bytes("b/\u{FF}z")))
        #expect(g.allows(.read, key: Self.bytes("b/éa")))
        #expect(!g.allows(.read, key: Self.bytes("b/e\u{301}a")), "no normalisation: e + combining accent is other bytes")
    }

    @Test func writeAllowance() throws {
        let g = try Self.grants("create:b,write:b/tmp/*")
        #expect(g.write(key: Self.bytes("b/tmp/x")) == .replace)
        #expect(g.write(key: Self.bytes("b/x")) == .createOnly)
        #expect(g.write(key: Self.bytes("c/x")) == nil)
    }

    @Test func listingsNeedAGrantOverEveryKeyOfThePrefix() throws {
        let g = try Self.grants("read:photos,read:docs/team/*,read:docs/one.txt")
        #expect(g.allowsListing(prefix: Self.bytes("photos/")))
        #expect(g.allowsListing(prefix: Self.bytes("photos/2024/")))
        #expect(!g.allowsListing(prefix: Self.bytes("photos")), "also lists photosx/...")
        #expect(!g.allowsListing(prefix: Self.bytes("")))
        #expect(g.allowsListing(prefix: Self.bytes("docs/team/")))
        #expect(g.allowsListing(prefix: Self.bytes("docs/team/a")))
        #expect(!g.allowsListing(prefix: Self.bytes("docs/")))
        #expect(!g.allowsListing(prefix: Self.bytes("docs/one.txt")), "a key grant lists nothing")
        #expect(try Self.grants("read").allowsListing(prefix: Self.bytes("")))
    }

    @Test func buckets() throws {
        let g = try Self.grants("write:photos,read:docs/team/*,delete:logs/*,admin:cfg/k")
        #expect(g.allows(.write, wholeBucket: "photos"))
        #expect(!g.allows(.read, wholeBucket: "docs"))
        #expect(g.allows(.delete, wholeBucket: "logs"), "logs/* is every key of logs")
        #expect(!g.allows(.admin, wholeBucket: "cfg"))
        #expect(g.touches(bucket: "photos") && g.touches(bucket: "docs") && g.touches(bucket: "cfg"))
        #expect(!g.touches(bucket: "doc") && !g.touches(bucket: "other"))
        #expect(!g.allowsEverywhere(.admin))
        #expect(try Self.grants("admin").allowsEverywhere(.admin))
    }

    @Test func descriptionRoundTrips() throws {
        let text = "read:*,write:photos,create:b/p*,delete:b/k"
        #expect(try Self.grants(text).description == text)
        #expect(try Self.grants(try Self.grants(text).description) == Self.grants(text))
    }
}

import BlobStore
import Testing
@testable import BlobAPIv1
@testable import HTTPCore
@testable import Access

@Suite struct KeyDecodingTests {
    func key(_ raw: String) throws -> BlobKey {
        try BlobService.key(ArraySlice(raw.utf8))
    }

    @Test func decodesStrictly() throws {
        #expect(try key("a/b.txt").rawValue == "a/b.txt")
        #expect(try key("a%2Fb").rawValue == "a/b", "%2F decodes to a slash")
        #expect(try key("a+b").rawValue == "a+b", "+ is a plus")
        #expect(try key("caf%C3%A9").rawValue == "café")
        #expect(try key("%E2%82%AC").bytes == [0xE2, 0x82, 0xAC])
    }

    @Test func keepsNormalisationForms() throws {
        let nfc = try key("caf%C3%A9"), nfd = try key("cafe%CC%81")
        #expect(nfc != nfd, "NFC and NFD spellings are two keys")
        #expect(nfc.bytes != nfd.bytes)
    }

    @Test(arguments: ["", "%", "%2", "%zz", "a%G0", "a%00b", "%0A", "a%7F", "%FF", "%C3", "a//b", "/a", "a/", "./a", "a/..", "..",
                      "a/./b", "%2E%2E"])
    func rejects(_ raw: String) {
        #expect(throws: (any Error).self) { try key(raw) }
    }

    @Test func lengthLimit() throws {
        #expect(try key(String(repeating: "k", count: 1088)).bytes.count == 1088)
        #expect(throws: StoreError.self) { try key(String(repeating: "k", count: 1089)) }
        #expect(throws: StoreError.self) { try key(String(repeating: "%C3%A9", count: 545)) }
    }

    /// Empty segments are named with %2F; the path itself never has one.
    @Test func emptySegmentsTravelAsEscapedSlashes() throws {
        #expect(try key("dir%2F").rawValue == "dir/")
        #expect(try key("a%2F%2Fb").rawValue == "a//b")
        #expect(try key("%2Flead").rawValue == "/lead")
        #expect(try key("a/b%2F").rawValue == "a/b/")
        #expect(BlobService.location(of: try BlobKey("a//b")) == "/v1/blobs/a%2F%2Fb")
        #expect(BlobService.location(of: try BlobKey("a/b")) == "/v1/blobs/a/b")
    }

    @Test func routes() throws {
        #expect(try BlobService.route(Array("/v1/blobs".utf8)).route.label == "/v1/blobs")
        let blob = try BlobService.route(Array("/v1/blobs/a/b".utf8))
        #expect(blob.route.label == "/v1/blobs/{key}")
        #expect(Array(blob.parameter) == Array("a/b".utf8))
        #expect(try BlobService.route(Array("/v1/uploads/x".utf8)).route.label == "/v1/uploads/{id}")
        #expect(throws: HTTPError.noRoute) { try BlobService.route(Array("/v1/uploads/".utf8)) }
        #expect(throws: HTTPError.noRoute) { try BlobService.route(Array("/v1/blobsx".utf8)) }
        #expect(throws: HTTPError.noRoute) { try BlobService.route(Array("/".utf8)) }
        let setting = try BlobService.route(Array("/v1/admin/buckets/photos/public".utf8))
        #expect(setting.route.label == "/v1/admin/buckets/{bucket}/public")
        #expect(Array(setting.parameter) == Array("photos".utf8))
        #expect(throws: HTTPError.noRoute) { try BlobService.route(Array("/v1/admin/buckets/a/b/public".utf8)) }
        #expect(throws: HTTPError.noRoute) { try BlobService.route(Array("/v1/admin/buckets//public".utf8)) }
        #expect(throws: HTTPError.noRoute) { try BlobService.route(Array("/v1/admin/buckets/public".utf8)) }
        #expect(try BlobService.route(Array("/ui/".utf8)).route.label == "/ui/{file}")
        #expect(try BlobService.route(Array("/v1/buckets".utf8)).route.label == "/v1/buckets")
        let bucket = try BlobService.route(Array("/v1/buckets/photos".utf8))
        #expect(bucket.route.label == "/v1/buckets/{name}")
        #expect(Array(bucket.parameter) == Array("photos".utf8))
        #expect(throws: HTTPError.noRoute) { try BlobService.route(Array("/v1/buckets/".utf8)) }
    }

    /// The route table, as the Allow header and the grant check see it: one row per route.
    @Test func routeTable() {
        let table = BlobService.routes.map { route in
            "\(route.label) " + route.methods.map { "\($0.name):\($0.need)" }.joined(separator: ",")
        }
        #expect(table == [
            "/v1/blobs GET:read(prefix),HEAD:read(prefix),POST:write(*)",
            "/v1/blobs/{key} GET:read,HEAD:read,PUT:write,DELETE:delete",
            "/v1/uploads POST:write(metadata key),OPTIONS:-",
            "/v1/uploads/{id} HEAD:write(upload's key),PATCH:write(upload's key),DELETE:write(upload's key),OPTIONS:-",
            "/v1/admin/keys GET:admin:*,POST:admin:*",
            "/v1/admin/keys/{id} GET:admin:*,PUT:admin:*,DELETE:admin:*",
            "/v1/shares GET:-,POST:-",
            "/v1/shares/{id} DELETE:-",
            "/s/{id} GET:-,HEAD:-,PUT:-,POST:-,PATCH:-,DELETE:-,OPTIONS:-",
            "/v1/admin/buckets/{bucket}/public GET:admin(bucket),PUT:admin(bucket)",
            "/v1/admin/buckets/{bucket}/cors GET:admin(bucket),PUT:admin(bucket),DELETE:admin(bucket)",
            "/v1/admin/buckets/{bucket}/lifecycle GET:admin(bucket),PUT:admin(bucket),DELETE:admin(bucket)",
            "/v1/admin/buckets/{bucket}/notifications GET:admin(bucket),PUT:admin(bucket),DELETE:admin(bucket)",
            "/v1/admin/events GET:admin:*",
            "/v1/buckets GET:any",
            "/v1/buckets/{name} PUT:write(bucket),DELETE:delete(bucket)",
            "/v1/whoami GET:-",
            "/ui GET:-,HEAD:-",
            "/ui/{file} GET:-,HEAD:-",
            "/healthz GET:-,HEAD:-",
            "/readyz GET:-,HEAD:-",
            "/metrics GET:-,HEAD:-",
        ])
    }

    @Test func locationEncodesTheKey() throws {
        #expect(BlobService.location(of: try BlobKey("a b/c%d")) == "/v1/blobs/a%20b/c%25d")
    }

    @Test func query() {
        let pairs = PercentEncoding.decodeQuery(Array("prefix=a%2Fb&limit=5&after=x+y".utf8))
        #expect(pairs?.map(\.name) == ["prefix", "limit", "after"])
        #expect(pairs?.map(\.value) == [Array("a/b".utf8), Array("5".utf8), Array("x+y".utf8)])
        #expect(PercentEncoding.decodeQuery(Array("prefix=%zz".utf8)) == nil)
    }
}

@Suite struct DigestFieldTests {
    let helloSHA256: [UInt8] = [0x58, 0x91, 0xb5, 0xb5, 0x22, 0xd5, 0xdf, 0x08, 0x6d, 0x0f, 0xf0, 0xb1, 0x10, 0xfb, 0xd9, 0xd2,
                                0x1b, 0xb4, 0xfc, 0x71, 0x63, 0xaf, 0x34, 0xd0, 0x82, 0x86, 0xa2, 0xe8, 0x46, 0xf6, 0xbe, 0x03]

    @Test func parsesSHA256() throws {
        #expect(try DigestField.sha256(in: "sha-256=:WJG1tSLV3whtD/CxEPvZ0hu0/HFjrzTQgoai6Eb2vgM=:") == helloSHA256)
        #expect(try DigestField.sha256(in: "sha-512=:AAAA:, sha-256=:WJG1tSLV3whtD/CxEPvZ0hu0/HFjrzTQgoai6Eb2vgM=:") == helloSHA256)
        #expect(try DigestField.sha256(in: "sha-512=:AAAA:") == nil, "algorithms blobd does not verify are ignored")
        #expect(DigestField.format(sha256: helloSHA256) == "sha-256=:WJG1tSLV3whtD/CxEPvZ0hu0/HFjrzTQgoai6Eb2vgM=:")
    }

    @Test(arguments: ["sha-256", "sha-256=abc", "sha-256=:not base64!:", "=:AAAA:", "sha-256=:WJG1tSLV3whtD/CxEPvZ0hu0/HFjrzTQgoai6Eb2vgM="])
    func rejectsMalformed(_ value: String) {
        #expect(throws: DigestField.Failure.malformed) { try DigestField.sha256(in: value) }
    }

    @Test func rejectsWrongLength() {
        #expect(throws: DigestField.Failure.wrongLength) { try DigestField.sha256(in: "sha-256=:AAAA:") }
    }
}

@Suite struct TokensFileTests {
    @Test func parsesLinesAndComments() throws {
        let entries = try AccessPolicy.parse("# comment\n\nalpha read\nbeta read,write,delete # all\n\tgamma\tdelete:b/p*\r\n"
                                             + "s3 AKID secret create:b\nanonymous read:pub\n")
        #expect(entries == [
            .bearer(token: "alpha", grants: Grants([Grant(.read)])),
            .bearer(token: "beta", grants: Grants([Grant(.read), Grant(.write), Grant(.delete)])),
            .bearer(token: "gamma", grants: Grants([Grant(.delete, .prefix(Array("b/p".utf8)))])),
            .s3(id: "AKID", secret: "secret", grants: Grants([Grant(.create, .bucket("b"))])),
            .anonymous(Grants([Grant(.read, .bucket("pub"))])),
        ])
    }

    /// A token or S3 line may end with `name=NAME` (issue 35, item 19); the name is the last
    /// word, which GRANTS never is.
    @Test func parsesNames() throws {
        let entries = try AccessPolicy.parse("alpha read name=alice\ns3 AKID secret create:b name=backup-bot # the bot\n"
                                             + "beta write\ns3 read name=s3-is-a-token\nname=tok read name=ünïcode\n")
        #expect(entries == [
            .bearer(token: "alpha", grants: Grants([Grant(.read)]), name: "alice"),
            .s3(id: "AKID", secret: "secret", grants: Grants([Grant(.create, .bucket("b"))]), name: "backup-bot"),
            .bearer(token: "beta", grants: Grants([Grant(.write)]), name: nil),
            .bearer(token: "s3", grants: Grants([Grant(.read)]), name: "s3-is-a-token"),
            .bearer(token: "name=tok", grants: Grants([Grant(.read)]), name: "ünïcode"),
        ])
    }

    @Test(arguments: ["alpha name=alice", "alpha read name=", "alpha read name=a name=b", "anonymous read name=everyone",
                      "s3 AKID read name=no-secret", "alpha read name=" + String(repeating: "x", count: 201), "alpha read name=a\u{7F}b"])
    func rejectsBadNames(_ text: String) {
        #expect(throws: AccessPolicy.TokensFileError.self) { try AccessPolicy.parse(text) }
    }

    @Test(arguments: ["alpha", "alpha read write", "alpha fly", "alpha read,,write", "alpha read:*x", "anonymous"])
    func rejectsBadLines(_ text: String) {
        #expect(throws: AccessPolicy.TokensFileError.self) { try AccessPolicy.parse(text) }
    }

    @Test func constantTimeComparison() {
        #expect(AccessPolicy.constantTimeEqual([1, 2, 3], [1, 2, 3]))
        #expect(!AccessPolicy.constantTimeEqual([1, 2, 3], [1, 2, 4]))
        #expect(!AccessPolicy.constantTimeEqual([1, 2], [1, 2, 3]))
    }
}

/// A stored type a browser could run as a page gets the sandbox, however it is spelled.
@Suite struct ActiveContentTests {
    @Test func listsAndOddEssencesAreActive() {
        #expect(ActiveContent.isActive("text/plain,text/html"))
        #expect(ActiveContent.isActive("text/plain, image/png"))
        #expect(ActiveContent.isActive("text/pl ain"))
        #expect(ActiveContent.isActive("text/html; charset=utf-8"))
        #expect(ActiveContent.isActive(nil))
        #expect(!ActiveContent.isActive("text/plain; charset=utf-8"))
        #expect(!ActiveContent.isActive("image/png"))
        #expect(!ActiveContent.isActive("application/pdf"))
    }
}

@Suite struct ActiveContentScriptTests {
    @Test func scriptSubtypesAreActive() {
        #expect(ActiveContent.isActive("application/javascript"))
        #expect(ActiveContent.isActive("text/x-ecmascript; charset=utf-8"))
        #expect(ActiveContent.isActive("  image/svg+xml  "))
        #expect(ActiveContent.isActive("Text/HTML"))
        #expect(ActiveContent.isActive("multipart/x-mixed-replace; boundary=x"))
        #expect(ActiveContent.isActive("/html"))
        #expect(ActiveContent.isActive("text/"))
        #expect(!ActiveContent.isActive("application/json"))
        #expect(!ActiveContent.isActive(" application/octet-stream "))
    }
}

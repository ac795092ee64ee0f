import Foundation
import LiveBlobd
import Testing

/// Share links (issue 22) against the real blobd: a download count, expiry, revocation of the
/// link and of the key that made it, a prefix's listing and names, upload links with curl and
/// tuspy (create only), and exact 400s for bad requests.
@Suite struct ShareLinkTests {
    static let tokens = "admin-token admin,read,write,delete,share\nreader-token read\n"

    /// A node with the tokens above, and calls to it.
    struct Node {
        let blobd: BlobdProcess
        let dir = TempDir()

        init(_ extra: [String] = []) throws {
            let tokens = dir.file("tokens", Array(ShareLinkTests.tokens.utf8))
            chmod(tokens, 0o600)
            blobd = try BlobdProcess(["--tokens-file", tokens] + extra)
        }

        /// POST /v1/shares with `body` (JSON text) as `token`.
        func share(_ body: String, token: String? = "admin-token") throws -> CurlResponse {
            try call("POST", "/v1/shares", token: token, body: Array(body.utf8), type: "application/json")
        }

        /// A share made by the admin token, which must answer 201; its id and URL.
        func made(_ body: String, token: String = "admin-token") throws -> (id: String, url: String) {
            let response = try share(body, token: token)
            #expect(response.status == 201, "\(body): \(response.text)")
            return (try #require(response.json["id"] as? String), try #require(response.json["url"] as? String))
        }

        func call(_ method: String, _ path: String, token: String? = nil, body: [UInt8]? = nil, type: String? = nil,
                  headers: [String] = []) throws -> CurlResponse {
            var arguments = ["-X", method]
            if method == "HEAD" { arguments = ["-I"] }
            if let token { arguments += ["-H", "Authorization: Bearer " + token] }
            if let type { arguments += ["-H", "Content-Type: " + type] }
            for header in headers { arguments += ["-H", header] }
            if let body { arguments += ["--data-binary", "@" + dir.file("body-\(UUID().uuidString)", body)] }
            return try curl(arguments + [path.hasPrefix("http") ? path : blobd.baseURL + path])
        }

        func put(_ key: String, _ bytes: [UInt8]) throws {
            #expect(try call("PUT", "/v1/blobs/" + key, token: "admin-token", body: bytes).status == 201)
        }
    }

    @Test func downloadsAreCountedAndKeepRangesAndConditionals() throws {
        let node = try Node()
        let bytes = testBytes(100_000, seed: 7)
        try node.put("docs/report.pdf", bytes)
        let response = try node.share(#"{"key": "docs/report.pdf", "allow": "read", "max_downloads": 2}"#)
        #expect(response.status == 201)
        let json = response.json
        let id = try #require(json["id"] as? String)
        #expect(id.count == 32 && id.allSatisfy(\.isHexDigit))
        #expect(json["url"] as? String == node.blobd.baseURL + "/s/" + id)
        #expect(json["max_downloads"] as? Int == 2 && json["expires"] is NSNull && json["downloads"] as? Int == 0)
        #expect(try node.share(#"{"key": "docs/report.pdf", "allow": "read"}"#, token: "reader-token").status == 403, "no share grant")
        #expect(try node.share(#"{"key": "docs/report.pdf", "allow": "read"}"#, token: nil).status == 401)

        let url = "/s/" + id
        let head = try node.call("HEAD", url)
        #expect(head.status == 200 && head.header("Content-Length") == "100000")
        #expect(head.header("Content-Disposition") == "attachment; filename=\"report.pdf\"")
        let etag = try #require(head.header("ETag"))
        #expect(try node.call("GET", url, headers: ["If-None-Match: " + etag]).status == 304, "a 304 is no download")
        #expect(try node.call("GET", url, headers: ["Range: bytes=0-"], ).status == 206)
        let range = try node.call("GET", url, headers: ["Range: bytes=10-19", "If-Range: " + etag])
        #expect(range.status == 206 && range.body == Array(bytes[10...19]))
        #expect(range.header("Content-Range") == "bytes 10-19/100000")
        #expect(try node.call("GET", url).status == 404, "two downloads used it up")
        #expect(try node.call("HEAD", url).status == 404)
        let listed = try node.call("GET", "/v1/shares", token: "admin-token").json["shares"] as? [[String: Any]]
        #expect(listed?.count == 1 && listed?.first?["downloads"] as? Int == 2 && listed?.first?["key"] as? String == "docs/report.pdf")
        #expect(try node.call("GET", "/v1/shares", token: "reader-token").json["shares"] as? [Any] != nil)
        #expect((try node.call("GET", "/v1/shares", token: "reader-token").json["shares"] as? [Any])?.isEmpty == true)
        #expect(eventually { node.blobd.stderr.contains("share:" + id) }, "the access log names the link")
        #expect(try node.call("GET", "/s/" + String(repeating: "0", count: 32)).status == 404)
        #expect(try node.call("GET", "/s/not-an-id").status == 404)
    }

    @Test func expiryAndRevocation() throws {
        let node = try Node()
        try node.put("docs/a.txt", Array("alpha".utf8))
        let short = try node.made(#"{"key": "docs/a.txt", "allow": "read", "expires_in": 1}"#)
        #expect(try node.call("GET", short.url).text == "alpha")
        Thread.sleep(forTimeInterval: 2.1)
        #expect(try node.call("GET", short.url).status == 404, "expired")

        let link = try node.made(#"{"key": "docs/a.txt", "allow": "read"}"#)
        #expect(try node.call("GET", link.url).status == 200)
        #expect(try node.call("DELETE", "/v1/shares/" + link.id, token: "reader-token").status == 403, "not its maker")
        #expect(try node.call("DELETE", "/v1/shares/" + link.id).status == 401)
        #expect(try node.call("DELETE", "/v1/shares/" + link.id, token: "admin-token").status == 204)
        #expect(try node.call("GET", link.url).status == 404, "revoked")
        #expect(try node.call("DELETE", "/v1/shares/" + link.id, token: "admin-token").status == 404)
    }

    @Test func aLinkLivesAsLongAsItsMakersGrant() throws {
        let node = try Node()
        try node.put("docs/a.txt", Array("alpha".utf8))
        let made = try node.call("POST", "/v1/admin/keys", token: "admin-token",
                                 body: Array(#"{"name": "sharer", "grants": ["read:docs", "share:docs/a*"]}"#.utf8), type: "application/json")
        #expect(made.status == 201)
        let keyID = try #require(made.json["id"] as? String), token = try #require(made.json["token"] as? String)
        #expect(try node.share(#"{"prefix": "docs/", "allow": "read"}"#, token: token).status == 403, "share covers docs/a* only")
        let link = try node.made(#"{"key": "docs/a.txt", "allow": "read"}"#, token: token)
        #expect(try node.call("GET", link.url).text == "alpha")
        let listed = try node.call("GET", "/v1/shares", token: token).json["shares"] as? [[String: Any]]
        #expect(listed?.map { $0["id"] as? String } == [link.id])

        func grants(_ list: String) throws -> Int {
            try node.call("PUT", "/v1/admin/keys/\(keyID)/grants", token: "admin-token", body: Array(#"{"grants": \#(list)}"#.utf8),
                          type: "application/json").status
        }
        #expect(try grants(#"["read:docs"]"#) == 200)
        #expect(try node.call("GET", link.url).status == 404, "the maker lost its share grant")
        #expect(try grants(#"["read:docs", "share:docs"]"#) == 200)
        #expect(try node.call("GET", link.url).status == 200, "and has it again")
        #expect(try node.call("DELETE", "/v1/admin/keys/" + keyID, token: "admin-token").status == 204)
        #expect(try node.call("GET", link.url).status == 404, "the maker's key is revoked")
    }

    @Test func aPrefixIsListedAndServedByName() throws {
        let node = try Node()
        for (key, text) in [("docs/a.txt", "alpha"), ("docs/sub/b.txt", "beta"), ("docs/\u{00FC}ber.txt", "uber"), ("other/x", "secret")] {
            try node.put(PercentEncodingForTests.path(key), Array(text.utf8))
        }
        let link = try node.made(#"{"prefix": "docs/", "allow": "read"}"#)
        #expect(link.url.hasSuffix("/"))
        let listing = try node.call("GET", link.url)
        #expect(listing.status == 200 && listing.header("Content-Type") == "application/json")
        let blobs = listing.json["blobs"] as? [[String: Any]]
        #expect(blobs?.map { $0["key"] as? String } == ["a.txt", "sub/b.txt", "\u{00FC}ber.txt"])
        #expect(listing.json["next"] is NSNull)
        let folders = try node.call("GET", link.url + "?delimiter=/")
        #expect(folders.json["prefixes"] as? [String] == ["sub/"])
        #expect((folders.json["blobs"] as? [[String: Any]])?.count == 2)
        let page = try node.call("GET", link.url + "?limit=1&after=a.txt")
        #expect((page.json["blobs"] as? [[String: Any]])?.first?["key"] as? String == "sub/b.txt" && page.json["next"] as? String == "sub/b.txt")

        let bare = try node.call("GET", String(link.url.dropLast()))
        #expect(bare.status == 308 && bare.header("Location") == "/s/\(link.id)/", "the listing is under the slash")
        #expect(try node.call("GET", link.url + "sub/b.txt").text == "beta")
        let uber = try node.call("GET", link.url + "%C3%BCber.txt")
        #expect(uber.text == "uber")
        #expect(uber.header("Content-Disposition") == "attachment; filename=\"__ber.txt\"; filename*=UTF-8''%C3%BCber.txt")
        #expect(try node.call("GET", link.url + "missing").status == 404)
        let escape = try node.call("GET", link.url + "../other/x")
        #expect([400, 404].contains(escape.status) && escape.text != "secret")
        #expect(try node.call("PUT", link.url + "new", body: [1]).status == 405, "a read link takes no upload")
    }

    @Test func uploadLinksOnlyCreate() throws {
        let node = try Node()
        let one = try node.made(#"{"key": "inbox/one.bin", "allow": "upload"}"#)
        let bytes = testBytes(300_000, seed: 3)
        #expect(try node.call("PUT", one.url, body: bytes).status == 201)
        #expect(try node.call("PUT", one.url, body: [9, 9]).status == 403, "create only")
        #expect(try node.call("GET", "/v1/blobs/inbox/one.bin", token: "reader-token").body == bytes, "kept byte for byte")
        #expect(try node.call("GET", one.url).status == 405, "an upload link serves no download")

        let drop = try node.made(#"{"prefix": "inbox/drop/", "allow": "upload"}"#)
        #expect(try node.call("PUT", drop.url + "a.txt", body: Array("first".utf8)).status == 201)
        #expect(try node.call("PUT", drop.url + "a.txt", body: Array("second".utf8)).status == 403)
        #expect(try node.call("GET", "/v1/blobs/inbox/drop/a.txt", token: "reader-token").text == "first")

        // tus with curl: creation through the link, then PATCH at the Location it answers.
        let created = try node.call("POST", drop.url + "uploads", headers: [
            "Tus-Resumable: 1.0.0", "Upload-Length: 5", "Upload-Metadata: filename " + Data("t.txt".utf8).base64EncodedString()])
        #expect(created.status == 201)
        let location = try #require(created.header("Location"))
        #expect(location.hasPrefix("/s/\(drop.id)/uploads/"))
        let patched = try node.call("PATCH", location, body: Array("hello".utf8), type: "application/offset+octet-stream",
                                    headers: ["Tus-Resumable: 1.0.0", "Upload-Offset: 0"])
        #expect(patched.status == 204 && patched.header("Upload-Offset") == "5")
        #expect(try node.call("GET", "/v1/blobs/inbox/drop/t.txt", token: "reader-token").text == "hello")
        #expect(try node.call("HEAD", location, headers: ["Tus-Resumable: 1.0.0"]).header("Upload-Offset") == "5")
        let other = try node.call("POST", drop.url + "uploads", headers: [
            "Tus-Resumable: 1.0.0", "Upload-Length: 1", "Upload-Metadata: filename " + Data("t.txt".utf8).base64EncodedString()])
        #expect(other.status == 403, "tus through the link creates only: \(other.text)")

        // tuspy, through a key's upload link.
        let big = testBytes(3 * 1024 * 1024 + 17, seed: 5)
        let link = try node.made(#"{"key": "inbox/tuspy.bin", "allow": "upload"}"#)
        try Self.tuspy(link.url + "/uploads", big, node.dir)
        #expect(try node.call("GET", "/v1/blobs/inbox/tuspy.bin", token: "reader-token").body == big)
        #expect(try node.call("DELETE", "/v1/shares/" + link.id, token: "admin-token").status == 204)
        #expect(try node.call("PUT", link.url, body: [1]).status == 404, "revoked")
    }

    /// Uploads `bytes` with tuspy to the tus creation URL `url`.
    static func tuspy(_ url: String, _ bytes: [UInt8], _ dir: TempDir, metadata: String = "{}") throws {
        let file = dir.file("tuspy-\(UUID().uuidString)", bytes)
        let script = """
            import sys, json
            from tusclient import client
            u = client.TusClient(sys.argv[1]).uploader(sys.argv[2], chunk_size=1024 * 1024, metadata=json.loads(sys.argv[3]))
            u.upload()
            print(u.url)
            """
        let result = try run("/usr/bin/env", ["python3", "-c", script, url, file, metadata], timeout: 120)
        #expect(result.status == 0, "\(result.stderr)")
    }

    @Test func badRequestsAreRefusedWithClearAnswers() throws {
        let node = try Node()
        let refused = [
            #"{"key": "a/b", "prefix": "a/", "allow": "read"}"#, #"{"allow": "read"}"#, #"{"key": "a/b", "allow": "write"}"#,
            #"{"key": "a/b"}"#, #"{"key": 7, "allow": "read"}"#, #"{"prefix": "", "allow": "read"}"#,
            #"{"key": "a/b", "allow": "read", "expires_in": -1}"#, #"{"key": "a/b", "allow": "read", "expires_in": 0}"#,
            #"{"key": "a/b", "allow": "read", "expires_in": 1.5}"#, #"{"key": "a/b", "allow": "read", "expires_in": 1e300}"#,
            #"{"key": "a/b", "allow": "read", "expires_in": 99999999999999999999999999}"#,
            #"{"key": "a/b", "allow": "read", "expires_in": "60"}"#, #"{"key": "a/b", "allow": "read", "max_downloads": 0}"#,
            #"{"key": "a/b", "allow": "read", "max_downloads": -5}"#, #"{"key": "a/b", "allow": "read", "max_downloads": true}"#,
            #"{"key": "a/b", "allow": "read", "max_downloads": 18446744073709551617}"#,
            #"{"key": "a/b", "allow": "upload", "max_downloads": 1}"#, #"{"key": "a/b", "allow": "read", "extra": 1}"#,
            "[]", "not json",
        ]
        for body in refused {
            let response = try node.share(body)
            #expect(response.status == 400, "\(body): \(response.status) \(response.text)")
            #expect(response.header("Content-Type") == "application/problem+json", "\(body)")
        }
        #expect(try node.call("POST", "/v1/shares", token: "admin-token", body: Array("{}".utf8), type: "text/plain").status == 415)
        #expect(try node.call("DELETE", "/v1/shares/nothing", token: "admin-token").status == 404)
        #expect(try node.call("PUT", "/v1/shares", token: "admin-token").status == 405)
    }
}

/// Keys with characters a URL path escapes.
enum PercentEncodingForTests {
    static func path(_ key: String) -> String {
        key.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? key
    }
}

/// Share links on a two-node PostgreSQL cluster: a link made on one node works on the other,
/// and its expiry, its used-up count, its revocation and the revocation of the key that made it
/// are 404 on both at once; a prefix's link lists on both; upload links take curl and tuspy on both.
@Suite(.serialized, .enabled(if: PostgresServer.isInstalled, "PostgreSQL 15 is installed by make deps"))
struct ClusterShareLinkTests {
    @Test func linksWorkAndEndOnBothNodes() throws {
        let dir = TempDir()
        let tokens = dir.file("tokens", Array(ShareLinkTests.tokens.utf8))
        chmod(tokens, 0o600)
        let cluster = try ClusterTests.Cluster(extra: ["--tokens-file", tokens])
        let file = dir.file("big.bin", testBytes(2 * 1024 * 1024 + 5, seed: 9))
        try ClusterTests.python("""
            import time, base64
            from tusclient import client
            admin = {"Authorization": "Bearer admin-token", "Content-Type": "application/json"}
            def share(conn, body, headers=admin):
                status, _, answer = request(conn, "POST", "/v1/shares", json.dumps(body), headers)
                check(status == 201, "share %r: %d %r" % (body, status, answer))
                return json.loads(answer)
            def get(conn, path):
                return request(conn, "GET", urllib.parse.urlparse(path).path + ("?" + urllib.parse.urlparse(path).query if "?" in path else ""))
            for key in ["docs/a.txt", "docs/sub/b.txt"]:
                check(request(A, "PUT", "/v1/blobs/" + key, key.encode(), admin)[0] == 201, "put " + key)
            # A download count shared by both nodes.
            once = share(A, {"key": "docs/a.txt", "allow": "read", "max_downloads": 2})
            check(once["url"].startswith(os.environ["A"] + "/s/"), "the URL names the node asked: %r" % once["url"])
            check(get(B, once["url"])[2] == b"docs/a.txt", "B serves A's link")
            check(get(A, once["url"])[0] == 200, "A too")
            check(get(B, once["url"])[0] == 404 and get(A, once["url"])[0] == 404, "used up on both")
            # Expiry.
            short = share(B, {"key": "docs/a.txt", "allow": "read", "expires_in": 1})
            check(get(A, short["url"])[0] == 200, "a link made on B works on A")
            time.sleep(2.1)
            check(get(A, short["url"])[0] == 404 and get(B, short["url"])[0] == 404, "expired on both")
            # Revocation on one node is 404 at once on the other.
            link = share(A, {"key": "docs/a.txt", "allow": "read"})
            check(get(B, link["url"])[0] == 200, "in force")
            check(request(B, "DELETE", "/v1/shares/" + link["id"], None, admin)[0] == 204, "revoke on B")
            check(get(A, link["url"])[0] == 404 and get(B, link["url"])[0] == 404, "revoked on both")
            # The maker's key revoked on B: its links are 404 on A at once.
            status, _, body = request(A, "POST", "/v1/admin/keys", json.dumps({"name": "sharer", "grants": ["read:docs", "share:docs"]}), admin)
            check(status == 201, "key: %r" % body)
            key = json.loads(body)
            mine = share(A, {"prefix": "docs/", "allow": "read"}, {"Authorization": "Bearer " + key["token"], "Content-Type": "application/json"})
            for conn in [A, B]:
                status, _, listing = get(conn, mine["url"])
                check(status == 200 and [b["key"] for b in json.loads(listing)["blobs"]] == ["a.txt", "sub/b.txt"], "listing %r" % listing)
                check(get(conn, mine["url"] + "sub/b.txt")[2] == b"docs/sub/b.txt", "a prefix's name")
            check(request(B, "DELETE", "/v1/admin/keys/" + key["id"], None, admin)[0] == 204, "revoke the maker on B")
            check(get(A, mine["url"])[0] == 404 and get(A, mine["url"] + "sub/b.txt")[0] == 404, "the maker's links end on A at once")
            # Upload links: curl PUT on each node (create only), tuspy on each node.
            drop = share(A, {"prefix": "inbox/", "allow": "upload"})
            for name, conn in [("A", A), ("B", B)]:
                path = urllib.parse.urlparse(drop["url"]).path
                check(request(conn, "PUT", path + "put-" + name, b"via " + name.encode())[0] == 201, "PUT on " + name)
                check(request(conn, "PUT", path + "put-" + name, b"again")[0] == 403, "create only on " + name)
                base = os.environ[name] + path + "uploads"
                client.TusClient(base).uploader(sys.argv[1], chunk_size=1024 * 1024, metadata={"filename": "tus-" + name}).upload()
            for name in ["A", "B"]:
                check(request(B, "GET", "/v1/blobs/inbox/put-" + name, None, admin)[2] == b"via " + name.encode(), "PUT kept")
                got = request(A, "GET", "/v1/blobs/inbox/tus-" + name, None, admin)[2]
                check(got == open(sys.argv[1], "rb").read(), "tuspy upload on " + name)
            """, cluster, arguments: [file])
    }
}

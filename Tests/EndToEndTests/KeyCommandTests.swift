import Foundation
import LiveBlobd
import Testing

/// `blobd key ...`, the real binary against a real blobd: what it prints, what the keys it makes
/// can do at once (curl for the token, boto3 for the S3 pair), and its exit statuses.
@Suite struct KeyCommandTests {
    static let adminToken = "admin-token-e2e"

    /// blobd with both listeners, an admin token and a read-only token in its tokens file.
    static func start() throws -> (BlobdProcess, Int, TempDir) {
        let dir = TempDir()
        let tokens = dir.file("tokens", Array("\(adminToken) admin,read,write,delete\nreader-token read\n".utf8))
        chmod(tokens, 0o600)
        let blobd = try BlobdProcess(["--tokens-file", tokens, "--s3-listen", "127.0.0.1:0"])
        let port = try #require(blobd.s3Port, "the S3 listener announced its port")
        return (blobd, port, dir)
    }

    /// Runs `blobd key ARGUMENTS` with only BLOBD_URL and BLOBD_TOKEN (when given) in its environment.
    static func key(_ arguments: [String], url: String?, token: String? = adminToken) throws -> (status: Int32, stdout: String, stderr: String) {
        let environment = (url.map { ["BLOBD_URL=" + $0] } ?? []) + (token.map { ["BLOBD_TOKEN=" + $0] } ?? [])
        let result = try run("/usr/bin/env", ["-i"] + environment + [blobdExecutable(), "key"] + arguments, timeout: 60)
        return (result.status, String(decoding: result.stdout, as: UTF8.self), result.stderr)
    }

    /// Runs a boto3 script (S3Tests' helpers first) with the given access key pair.
    static func boto3(key: String, secret: String, port: Int, _ script: String) throws {
        let result = try run("/usr/bin/env", ["ENDPOINT=http://127.0.0.1:\(port)", "KEY=" + key, "SECRET=" + secret,
                                              "python3", "-c", S3Tests.client + script], timeout: 300)
        #expect(result.status == 0, "\(result.stderr)")
    }

    /// The `name: value` lines of a readable answer.
    static func fields(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[String(line[..<colon])] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return fields
    }

    static func json(_ text: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }

    @Test func createUseListGrantRevoke() throws {
        let (blobd, s3Port, _) = try Self.start()
        let url = blobd.baseURL
        let created = try Self.key(["create", "photos-app", "--grant", "read:photos", "--grant", "write:photos", "--grant", "delete:photos"], url: url)
        #expect(created.status == 0, "\(created.stderr)")
        #expect(created.stderr == "blobd key create: the token and the secret access key are not shown again; keep them now\n")
        let key = Self.fields(created.stdout)
        #expect(created.stdout.split(separator: "\n").map { String($0.prefix { $0 != ":" }) }
                == ["id", "name", "grants", "expires", "token", "access_key_id", "secret_access_key"])
        #expect(key["name"] == "photos-app" && key["grants"] == "read:photos,write:photos,delete:photos" && key["expires"] == "never")
        let id = try #require(key["id"]), token = try #require(key["token"])
        let accessKey = try #require(key["access_key_id"]), secret = try #require(key["secret_access_key"])

        // The token works at once, within its grants.
        let auth = ["-H", "Authorization: Bearer " + token]
        #expect(try curl(auth + ["-X", "PUT", "--data-binary", "jpeg bytes", url + "/v1/blobs/photos/a.jpg"]).status == 201)
        #expect(try curl(auth + [url + "/v1/blobs/photos/a.jpg"]).text == "jpeg bytes")
        #expect(try curl(auth + ["-X", "PUT", "--data-binary", "x", url + "/v1/blobs/other/x"]).status == 403)
        // So does the S3 pair.
        try Self.boto3(key: accessKey, secret: secret, port: s3Port, """
            s3.head_bucket(Bucket="photos")  # the /v1 write made the bucket S3's too
            check(s3.get_object(Bucket="photos", Key="a.jpg")["Body"].read() == b"jpeg bytes", "read with the new pair")
            s3.put_object(Bucket="photos", Key="b.txt", Body=b"from boto3")
            check(code(lambda: s3.put_object(Bucket="other", Key="x", Body=b"x")) == ("AccessDenied", 403), "outside its grants")
            """)

        // The listing shows it without secrets.
        let list = try Self.key(["list"], url: url)
        #expect(list.status == 0 && list.stderr.isEmpty)
        let lines = list.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first?.split(separator: " ", omittingEmptySubsequences: true) == ["ID", "NAME", "ACCESS", "KEY", "EXPIRES", "SOURCE", "GRANTS"])
        let row = try #require(lines.first { $0.hasPrefix(id + " ") })
        #expect(row.split(separator: " ") == [Substring(id), "photos-app", Substring(accessKey), "never", "api", "read:photos,write:photos,delete:photos"])
        #expect(lines.contains { $0.hasPrefix("token:") && $0.hasSuffix("tokens-file  admin:*,read:*,write:*,delete:*") })
        #expect(!list.stdout.contains(token) && !list.stdout.contains(secret))
        let listed = try Self.key(["list", "--json"], url: url)
        let keys = try #require(Self.json(listed.stdout)["keys"] as? [[String: Any]])
        let entry = try #require(keys.first { $0["id"] as? String == id })
        #expect(Set(entry.keys) == ["id", "name", "grants", "access_key_id", "created", "expires", "source", "read_only"])

        // grant replaces the grants: writing becomes forbidden, reading stays.
        let granted = try Self.key(["grant", id, "read:photos"], url: url)
        #expect(granted.status == 0, "\(granted.stderr)")
        #expect(Self.fields(granted.stdout)["grants"] == "read:photos" && Self.fields(granted.stdout)["source"] == "api")
        #expect(try curl(auth + ["-X", "PUT", "--data-binary", "x", url + "/v1/blobs/photos/c.jpg"]).status == 403)
        #expect(try curl(auth + [url + "/v1/blobs/photos/b.txt"]).text == "from boto3")
        let shown = try Self.key(["show", id, "--json"], url: url)
        #expect(Self.json(shown.stdout)["grants"] as? [String] == ["read:photos"])

        // revoke: the token gets 401 at once; a second revoke is refused.
        let revoked = try Self.key(["revoke", id], url: url)
        #expect(revoked.status == 0 && revoked.stdout == "revoked \(id)\n" && revoked.stderr.isEmpty)
        #expect(try curl(auth + [url + "/v1/blobs/photos/a.jpg"]).status == 401)
        let again = try Self.key(["revoke", id, "--json"], url: url)
        #expect(again.status == 1 && again.stdout.isEmpty)
        #expect(again.stderr == "blobd key revoke: 404 Not found: No key has this id.\n")
    }

    @Test func jsonOutputIsTheServersJSON() throws {
        let (blobd, _, _) = try Self.start()
        let created = try Self.key(["create", "ci", "--grant", "read", "--expires-in", "3600", "--json"], url: blobd.baseURL)
        #expect(created.status == 0 && created.stderr.isEmpty, "\(created.stderr)")
        let key = Self.json(created.stdout)
        #expect(Set(key.keys) == ["id", "name", "grants", "token", "access_key_id", "secret_access_key", "created", "expires",
                                  "source", "read_only"])
        #expect(key["grants"] as? [String] == ["read:*"] && key["expires"] is String)
        let token = try #require(key["token"] as? String)
        #expect(try curl(["-H", "Authorization: Bearer " + token, blobd.baseURL + "/v1/blobs?limit=1"]).status == 200)
        let id = try #require(key["id"] as? String)
        let revoked = try Self.key(["revoke", id, "--json"], url: blobd.baseURL)
        #expect(revoked.status == 0 && revoked.stdout.isEmpty)
    }

    /// What blobd refuses exits 1 with its problem detail.
    @Test func refusalsExitOne() throws {
        let (blobd, _, _) = try Self.start()
        let url = blobd.baseURL
        let unknown = try Self.key(["list"], url: url, token: "not-a-token")
        #expect(unknown.status == 1 && unknown.stdout.isEmpty)
        #expect(unknown.stderr == "blobd key list: 401 Unauthorized: The bearer token is not known. (BLOBD_TOKEN is not a token this blobd knows)\n")
        let reader = try Self.key(["create", "x", "--grant", "read"], url: url, token: "reader-token")
        #expect(reader.status == 1)
        #expect(reader.stderr == "blobd key create: 403 Forbidden: The token's grants do not allow this: it needs admin on *. (BLOBD_TOKEN needs the grant admin:*)\n")
        let badGrant = try Self.key(["create", "x", "--grant", "bogus"], url: url)
        #expect(badGrant.status == 1)
        #expect(badGrant.stderr == "blobd key create: 400 Bad request: unknown action 'bogus' in grant 'bogus' (use read, write, create, delete, share or admin)\n")
        let fileID = try #require((Self.json(try Self.key(["list", "--json"], url: url).stdout)["keys"] as? [[String: Any]])?
            .compactMap { $0["id"] as? String }.first { $0.hasPrefix("token:") })
        let readOnly = try Self.key(["revoke", fileID], url: url)
        #expect(readOnly.status == 1 && readOnly.stderr.hasPrefix("blobd key revoke: 409 "), "\(readOnly.stderr)")
        let missing = try Self.key(["show", "k-no-such"], url: url)
        #expect(missing.status == 1 && missing.stderr == "blobd key show: 404 Not found: No key has this id.\n")
    }

    /// Usage errors and no answer exit 2.
    @Test func usageAndConnectionErrorsExitTwo() throws {
        let refused = try Self.key(["list"], url: "http://127.0.0.1:1")
        #expect(refused.status == 2)
        #expect(refused.stderr == "blobd key list: http://127.0.0.1:1: cannot connect to 127.0.0.1:1: Connection refused\n")
        let tls = try Self.key(["list"], url: "https://blobd.example.com")
        #expect(tls.status == 2)
        #expect(tls.stderr == "blobd key list: --url 'https://blobd.example.com': https:// is not supported here; give blobd's plain HTTP "
                + "address (run this on its host against http://127.0.0.1:PORT), or the plain http:// side of the TLS proxy in front of it\n")
        let flag = try Self.key(["list", "--url", "ftp://host"], url: nil)
        #expect(flag.status == 2 && flag.stderr == "blobd key list: --url 'ftp://host': it must start with http://\n")
        let noToken = try Self.key(["list"], url: "http://127.0.0.1:1", token: nil)
        #expect(noToken.status == 2)
        #expect(noToken.stderr == "blobd key list: set BLOBD_TOKEN to a token with admin:* (it is read from the environment only: a flag would show in ps)\n")
        let noGrant = try Self.key(["create", "x"], url: "http://127.0.0.1:1")
        #expect(noGrant.status == 2 && noGrant.stderr.hasPrefix("Error: give at least one --grant ACTION[:PATTERN]\n"), "\(noGrant.stderr)")
        let unknownFlag = try Self.key(["list", "--token", "x"], url: "http://127.0.0.1:1")
        #expect(unknownFlag.status == 2 && unknownFlag.stderr.hasPrefix("Error: Unknown option '--token'"), "\(unknownFlag.stderr)")
        let help = try Self.key(["--help"], url: nil)
        #expect(help.status == 0 && help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            .contains("Exit status: 0 done; 1 blobd refused the request (400 a bad name or grant, 401 a token it does not know,"))
        // The default URL when BLOBD_URL is unset: nothing listens there in the tests, or something that is not this blobd.
        let local = try Self.key(["list", "--url", "http://[::1]:1"], url: nil)
        #expect(local.status == 2 && local.stderr.hasPrefix("blobd key list: http://[::1]:1: cannot connect to [::1]:1: "), "\(local.stderr)")
    }
}

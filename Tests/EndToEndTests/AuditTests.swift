import Foundation
import LiveBlobd
import Testing

/// The audit trail (issue 22): every access-log line names who made the request (a key's name
/// and id, a token's digest, an S3 key of the tokens file, `anonymous`, or `-` before anyone
/// was identified), never a secret; `/metrics` counts every refusal by dialect and reason.
@Suite struct AuditTests {
    static let tokensFile = """
        audit-admin-s3cr3t read,write,delete,admin
        audit-reader-s3cr3t read:pub/*
        s3 \(S3Tests.accessKey) \(S3Tests.secret) read,write,delete

        """

    /// How a bearer token of the tokens file is logged: the first 16 bytes of its SHA-256.
    static func tokenName(_ token: String) -> String { "token:" + sha256Hex(Array(token.utf8)).prefix(32) }

    /// A catalog key made through the admin API: its id and secrets.
    struct Key {
        let id: String, token: String, accessKeyID: String, secret: String
    }

    static func makeKey(_ blobd: BlobdProcess, name: String, grants: [String], expiresIn: Int? = nil) throws -> Key {
        var request: [String: Any] = ["name": name, "grants": grants]
        if let expiresIn { request["expires_in"] = expiresIn }
        let body = try JSONSerialization.data(withJSONObject: request)
        let answer = try curl(["-X", "POST", "-H", "Authorization: Bearer audit-admin-s3cr3t", "-H", "Content-Type: application/json",
                               "--data-binary", "@-", blobd.baseURL + "/v1/admin/keys"], stdin: [UInt8](body))
        #expect(answer.status == 201, "\(answer.text)")
        let json = answer.json
        return Key(id: json["id"] as? String ?? "?", token: json["token"] as? String ?? "?",
                   accessKeyID: json["access_key_id"] as? String ?? "?", secret: json["secret_access_key"] as? String ?? "?")
    }

    /// The text access-log lines of `method` on blob key `key` (a key without spaces).
    static func lines(_ blobd: BlobdProcess, _ method: String, _ key: String) -> [Substring] {
        blobd.stderr.split(separator: "\n").filter {
            $0.contains(" info blobd: request blob.key=\(key) ") && $0.contains(" http.method=\(method) ")
        }
    }

    /// The line of each request ends in its status and principal, exactly.
    static func expectLine(_ blobd: BlobdProcess, _ method: String, _ key: String, endsWith tail: String,
                           sourceLocation: SourceLocation = #_sourceLocation) {
        let found = lines(blobd, method, key)
        #expect(found.contains { $0.hasSuffix(" " + tail) }, "\(method) \(key): \(found)", sourceLocation: sourceLocation)
    }

    @Test func accessLogNamesPrincipalsAndMetricsCountRefusals() throws {
        let dir = TempDir()
        let tokens = dir.file("tokens", Array(Self.tokensFile.utf8))
        chmod(tokens, 0o600)
        let blobd = try BlobdProcess(["--tokens-file", tokens, "--s3-listen", "127.0.0.1:0"])
        let port = try #require(blobd.s3Port)
        let b = blobd.baseURL
        let expiring = try Self.makeKey(blobd, name: "soon gone", grants: ["read:*"], expiresIn: 1)
        let key = try Self.makeKey(blobd, name: #"ci "backup" job"#, grants: ["read:*", "create:drop/*"])
        let admin = ["-H", "Authorization: Bearer audit-admin-s3cr3t"]
        for path in ["pub/a", "pub/v1-cat"] {
            #expect(try curl(admin + ["-X", "PUT", "--data-binary", "x", b + "/v1/blobs/" + path]).status == 201)
        }
        // /v1: each principal, and each refusal.
        #expect(try curl([b + "/v1/blobs/pub/v1-anon"]).status == 401)
        #expect(try curl(["-H", "Authorization: Bearer wrong-token-s3cr3t", b + "/v1/blobs/pub/v1-wrong"]).status == 401)
        #expect(try curl(["-H", "Authorization: Basic dXNlcjpwYXNz", b + "/v1/blobs/pub/v1-basic"]).status == 401)
        #expect(try curl(["-H", "Authorization: Bearer audit-reader-s3cr3t", "-X", "PUT", "--data-binary", "x",
                          b + "/v1/blobs/other/v1-forbidden"]).status == 403)
        #expect(try curl(["-H", "Authorization: Bearer \(key.token)", b + "/v1/blobs/pub/v1-cat"]).status == 200)
        for status in [201, 403] {
            #expect(try curl(["-H", "Authorization: Bearer \(key.token)", "-X", "PUT", "--data-binary", "x",
                              b + "/v1/blobs/drop/v1-once"]).status == status)
        }
        #expect(try curl(admin + ["-X", "PATCH", b + "/v1/blobs/pub/v1-method"]).status == 405)
        // S3 with boto3 and urllib; the expired credentials last (the catalog key lives 1 s).
        try S3Tests.python(S3Tests.client + """
            import time, urllib.request
            def status(url):
                try:
                    return urllib.request.urlopen(url).status
                except urllib.error.HTTPError as e:
                    return e.code
            s3.create_bucket(Bucket="audit")
            # "drop" is a bucket already: the /v1 PUT into it above made it one.
            check(s3.head_bucket(Bucket="drop")["ResponseMetadata"]["HTTPStatusCode"] == 200, "/v1 made the bucket")
            s3.put_object(Bucket="audit", Key="s3-file", Body=b"x")
            s3.get_object(Bucket="audit", Key="s3-file")
            key = client(key=sys.argv[1], secret=sys.argv[2])
            key.get_object(Bucket="audit", Key="s3-file")
            check(code(lambda: key.put_object(Bucket="audit", Key="s3-forbidden", Body=b"x")) == ("AccessDenied", 403), "forbidden")
            key.put_object(Bucket="drop", Key="s3-once", Body=b"x")
            check(code(lambda: key.put_object(Bucket="drop", Key="s3-once", Body=b"y")) == ("AccessDenied", 403), "create-only")
            check(code(lambda: client(secret="wrong-secret-s3cr3t").get_object(Bucket="audit", Key="s3-badsig"))
                  == ("SignatureDoesNotMatch", 403), "bad signature")
            check(code(lambda: client(key="NOSUCHKEY", secret="x").get_object(Bucket="audit", Key="s3-unknown"))
                  == ("InvalidAccessKeyId", 403), "unknown key")
            check(status(os.environ["ENDPOINT"] + "/audit/s3-anon") == 403, "anonymous")
            url = s3.generate_presigned_url("get_object", Params={"Bucket": "audit", "Key": "s3-expired"}, ExpiresIn=1)
            time.sleep(2.2)
            check(status(url) == 403, "expired URL")
            gone = client(key=sys.argv[3], secret=sys.argv[4])
            check(code(lambda: gone.get_object(Bucket="audit", Key="s3-expkey")) == ("InvalidAccessKeyId", 403), "expired key")
            """, port: port, blobd: blobd, arguments: [key.accessKeyID, key.secret, expiring.accessKeyID, expiring.secret])
        #expect(try curl(["-H", "Authorization: Bearer \(expiring.token)", b + "/v1/blobs/pub/v1-expired"]).status == 401)

        let metrics = try curl([b + "/metrics"]).text
        let expected = [
            ("v1", "no_credential", 1), ("v1", "unknown_credential", 2), ("v1", "bad_signature", 0), ("v1", "expired", 1),
            ("v1", "forbidden", 1), ("v1", "create_only", 1),
            ("s3", "no_credential", 1), ("s3", "unknown_credential", 1), ("s3", "bad_signature", 1), ("s3", "expired", 2),
            ("s3", "forbidden", 1), ("s3", "create_only", 1),
        ]
        let refusals = metrics.split(separator: "\n").filter { $0.hasPrefix("blobd_auth_refusals_total{") }
        #expect(refusals == expected.map { "blobd_auth_refusals_total{dialect=\"\($0)\",reason=\"\($1)\"} \($2)"[...] })

        let admin16 = Self.tokenName("audit-admin-s3cr3t"), reader16 = Self.tokenName("audit-reader-s3cr3t")
        let catalog = "principal=key:\(key.id) principal.name=\"ci \\\"backup\\\" job\""
        #expect(eventually { Self.lines(blobd, "GET", "pub/v1-expired").count == 1 })
        Self.expectLine(blobd, "PUT", "pub/a", endsWith: "http.status=201 principal=\(admin16)")
        Self.expectLine(blobd, "GET", "pub/v1-anon", endsWith: "http.status=401 principal=anonymous")
        Self.expectLine(blobd, "GET", "pub/v1-wrong", endsWith: "http.status=401 principal=-")
        Self.expectLine(blobd, "GET", "pub/v1-basic", endsWith: "http.status=401 principal=-")
        Self.expectLine(blobd, "PUT", "other/v1-forbidden", endsWith: "http.status=403 principal=\(reader16)")
        Self.expectLine(blobd, "GET", "pub/v1-cat", endsWith: "http.status=200 " + catalog)
        Self.expectLine(blobd, "PUT", "drop/v1-once", endsWith: "http.status=201 " + catalog)
        Self.expectLine(blobd, "PUT", "drop/v1-once", endsWith: "http.status=403 " + catalog)
        Self.expectLine(blobd, "PATCH", "pub/v1-method", endsWith: "http.status=405 principal=-")
        Self.expectLine(blobd, "GET", "pub/v1-expired", endsWith: "http.status=401 principal=-")
        Self.expectLine(blobd, "PUT", "audit/s3-file", endsWith: "http.status=200 principal=s3:\(S3Tests.accessKey)")
        Self.expectLine(blobd, "GET", "audit/s3-file", endsWith: "http.status=200 principal=s3:\(S3Tests.accessKey)")
        Self.expectLine(blobd, "GET", "audit/s3-file", endsWith: "http.status=200 " + catalog)
        Self.expectLine(blobd, "PUT", "audit/s3-forbidden", endsWith: "http.status=403 " + catalog)
        Self.expectLine(blobd, "PUT", "drop/s3-once", endsWith: "http.status=403 " + catalog)
        Self.expectLine(blobd, "GET", "audit/s3-badsig", endsWith: "http.status=403 principal=-")
        Self.expectLine(blobd, "GET", "audit/s3-unknown", endsWith: "http.status=403 principal=-")
        Self.expectLine(blobd, "GET", "audit/s3-anon", endsWith: "http.status=403 principal=anonymous")
        Self.expectLine(blobd, "GET", "audit/s3-expired", endsWith: "http.status=403 principal=-")
        Self.expectLine(blobd, "GET", "audit/s3-expkey", endsWith: "http.status=403 principal=-")
        // A line for every request, each naming a principal; never a token, a secret or a signature.
        let requests = blobd.stderr.split(separator: "\n").filter { $0.contains(" info blobd: request ") }
        #expect(requests.allSatisfy { $0.contains(" principal=") })
        for secret in ["audit-admin-s3cr3t", "audit-reader-s3cr3t", "wrong-token-s3cr3t", "dXNlcjpwYXNz", S3Tests.secret,
                       "wrong-secret-s3cr3t", key.token, key.secret, expiring.token, expiring.secret, "X-Amz-Signature"] {
            #expect(!blobd.stderr.contains(secret), "the log holds \(secret)")
        }
    }
}

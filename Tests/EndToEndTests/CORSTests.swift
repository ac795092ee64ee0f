import Foundation
import LiveBlobd
import Testing

/// CORS (issue 24): the global flags, a bucket's rules through S3 XML (boto3) and /v1 JSON, and
/// the exact headers of preflights and actual answers, asserted with urllib against the real blobd.
@Suite struct CORSTests {
    static let bootstrap = """
        {"buckets": [{"name": "plain"}, {"name": "pics", "cors": {"rules": [
            {"id": "sites", "allowed_origins": ["https://*.example.com"], "allowed_methods": ["GET", "PUT"],
             "allowed_headers": ["x-amz-*", "content-type"], "expose_headers": ["x-amz-meta-owner"], "max_age_seconds": 300}]}}],
         "keys": [{"name": "admin", "grants": ["read", "write", "delete", "share", "admin"], "token": "admin-token-0123",
                   "access_key_id": "ADMINKEY0123", "secret_access_key": "admin-secret-0123"},
                  {"name": "reader", "grants": ["read"], "token": "reader-token-0123",
                   "access_key_id": "READERKEY0123", "secret_access_key": "reader-secret-0123"}]}
        """

    static let prelude = """
        import os, sys, json, urllib.request, urllib.error, boto3, botocore
        from botocore.config import Config
        V1, S3 = os.environ["V1"], os.environ["ENDPOINT"]
        def check(condition, what):
            if not condition:
                sys.exit("FAILED: " + what)
        def call(method, url, headers={}, data=None):
            request = urllib.request.Request(url, method=method, headers=headers, data=data)
            try:
                with urllib.request.urlopen(request) as r:
                    return r.status, r.headers, r.read()
            except urllib.error.HTTPError as e:
                return e.code, e.headers, e.read()
        def cors(headers):
            return {k: v for k, v in headers.items() if k.lower().startswith("access-control-")}
        def s3(key, secret):
            return boto3.client("s3", endpoint_url=S3, region_name="us-east-1", aws_access_key_id=key,
                                aws_secret_access_key=secret,
                                config=Config(signature_version="s3v4", retries={"max_attempts": 1}))
        admin = s3("ADMINKEY0123", "admin-secret-0123")
        def error(fn):
            try:
                fn()
            except botocore.exceptions.ClientError as e:
                return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]
            return None
        EXPOSED = "ETag, Location, Content-Range, Content-Digest, Repr-Digest, Content-Disposition, Accept-Ranges, Blob-Version, Upload-Offset, Upload-Length, Upload-Expires, Upload-Metadata, Upload-Defer-Length, Upload-Concat, Tus-Resumable, Tus-Version, Tus-Extension, Tus-Max-Size, Tus-Checksum-Algorithm, x-amz-request-id, x-amz-version-id, x-amz-checksum-crc32, x-amz-checksum-crc32c, x-amz-checksum-crc64nvme, x-amz-checksum-sha1, x-amz-checksum-sha256, x-amz-checksum-type"
        ADMIN = {"Authorization": "Bearer admin-token-0123"}

        """

    /// blobd with the bootstrap file and `arguments`, and the script run against it.
    static func python(_ arguments: [String], _ script: String) throws {
        let dir = TempDir()
        let path = dir.file("bootstrap.json", Array(bootstrap.utf8))
        let blobd = try BlobdProcess(["--bootstrap", path, "--s3-listen", "127.0.0.1:0"] + arguments)
        let port = try #require(blobd.s3Port)
        let result = try run("/usr/bin/env", ["ENDPOINT=http://127.0.0.1:\(port)", "V1=\(blobd.baseURL)",
                                              "python3", "-c", prelude + script], timeout: 300)
        #expect(result.status == 0, "\(result.stderr)\n\(String(decoding: result.stdout, as: UTF8.self))")
    }

    /// The global flags: a preflight of an allowed origin gets exactly what it asked for, another
    /// origin 403 before any credential is looked at; actual answers (a 401 too) carry the
    /// origin and the exposed headers; tus's own OPTIONS keeps its headers and tus's PATCH is allowed.
    @Test func globalFlags() throws {
        try Self.python(["--cors-origin", "http://app.test:8000", "--cors-origin", "https://*.wild.test"], """
            status, h, body = call("OPTIONS", V1 + "/v1/blobs/plain/a.txt", {"Origin": "http://app.test:8000",
                "Access-Control-Request-Method": "PUT", "Access-Control-Request-Headers": "Content-Type, Authorization"})
            check(status == 200 and body == b"", "preflight allowed: %d" % status)
            check(cors(h) == {"Access-Control-Allow-Origin": "http://app.test:8000",
                              "Access-Control-Allow-Methods": "GET, HEAD, PUT, POST, PATCH, DELETE, OPTIONS",
                              "Access-Control-Allow-Headers": "content-type, authorization", "Access-Control-Max-Age": "600"},
                  "preflight headers: %r" % cors(h))
            check(h["Vary"] == "Origin, Access-Control-Request-Method, Access-Control-Request-Headers", "preflight Vary")
            status, h, _ = call("OPTIONS", V1 + "/v1/blobs/plain/a.txt", {"Origin": "https://x.wild.test",
                                                                           "Access-Control-Request-Method": "GET"})
            check(status == 200 and h["Access-Control-Allow-Origin"] == "https://x.wild.test", "a wildcard origin")
            status, h, body = call("OPTIONS", V1 + "/v1/blobs/plain/a.txt", {"Origin": "http://evil.test",
                                                                              "Access-Control-Request-Method": "PUT"})
            check(status == 403 and json.loads(body)["type"].endswith("/cors-not-allowed") and cors(h) == {}, "preflight refused")
            status, h, _ = call("GET", V1 + "/v1/blobs/plain/a.txt", {"Origin": "http://app.test:8000"})
            check(status == 401 and h["Access-Control-Allow-Origin"] == "http://app.test:8000"
                  and h["Access-Control-Expose-Headers"] == EXPOSED and h["Vary"] == "Origin"
                  and "Access-Control-Allow-Credentials" not in h, "a 401 carries CORS headers: %r" % dict(h))
            status, h, _ = call("PUT", V1 + "/v1/blobs/plain/a.txt", dict(ADMIN, Origin="http://app.test:8000"), b"hello")
            check(status == 201 and h["Access-Control-Allow-Origin"] == "http://app.test:8000" and h["ETag"], "PUT")
            status, h, _ = call("GET", V1 + "/v1/blobs/plain/a.txt", ADMIN)
            check(status == 200 and h["Vary"] == "Origin" and cors(h) == {}, "no Origin: Vary alone")
            status, h, _ = call("GET", V1 + "/v1/blobs/plain/a.txt", dict(ADMIN, Origin="http://evil.test"))
            check(status == 200 and h["Vary"] == "Origin" and cors(h) == {}, "another origin: Vary alone")
            status, h, _ = call("OPTIONS", V1 + "/v1/uploads", {"Origin": "http://app.test:8000"})
            check(status == 204 and h["Tus-Version"] == "1.0.0" and "creation" in h["Tus-Extension"]
                  and h["Access-Control-Allow-Origin"] == "http://app.test:8000", "tus OPTIONS keeps its headers: %r" % dict(h))
            status, h, _ = call("OPTIONS", V1 + "/v1/uploads/abc", {"Origin": "http://app.test:8000",
                "Access-Control-Request-Method": "PATCH",
                "Access-Control-Request-Headers": "tus-resumable,upload-offset,content-type,upload-checksum"})
            check(status == 200 and h["Access-Control-Allow-Headers"] == "tus-resumable, upload-offset, content-type, upload-checksum",
                  "tus PATCH preflight")
            status, h, _ = call("GET", S3 + "/plain/a.txt", {"Origin": "http://app.test:8000"})
            check(status == 403 and h["Access-Control-Allow-Origin"] == "http://app.test:8000" and h["Vary"] == "Origin", "S3 403")
            status, h, body = call("OPTIONS", S3 + "/plain/a.txt", {"Origin": "http://evil.test", "Access-Control-Request-Method": "GET"})
            check(status == 403 and b"<Code>AccessForbidden</Code>" in body and b"CORSResponse: This CORS request is not allowed." in body,
                  "S3 preflight refused")
            """)
    }

    /// `*` answers `*` without credentials, and echoes the origin with them.
    @Test func anyOriginAndCredentials() throws {
        try Self.python(["--cors-origin", "*"], """
            status, h, _ = call("OPTIONS", V1 + "/v1/blobs/plain/a", {"Origin": "http://a.test", "Access-Control-Request-Method": "GET"})
            check(status == 200 and h["Access-Control-Allow-Origin"] == "*" and "Access-Control-Allow-Credentials" not in h, "*")
            status, h, _ = call("GET", V1 + "/healthz", {"Origin": "http://a.test"})
            check(h["Access-Control-Allow-Origin"] == "*", "actual *")
            """)
        try Self.python([], """
            status, h, _ = call("GET", V1 + "/v1/blobs/plain/a", {"Origin": "http://a.test"})
            check("Vary" not in h and cors(h) == {}, "no CORS anywhere: answers unchanged")
            status, h, _ = call("OPTIONS", V1 + "/v1/blobs/plain/a", {"Origin": "http://a.test", "Access-Control-Request-Method": "GET"})
            check(status == 403, "no CORS anywhere: a preflight is refused")
            """)
        try Self.python(["--cors-origin", "*", "--cors-allow-credentials"], """
            status, h, _ = call("OPTIONS", V1 + "/v1/blobs/plain/a", {"Origin": "http://a.test", "Access-Control-Request-Method": "GET"})
            check(status == 200 and h["Access-Control-Allow-Origin"] == "http://a.test"
                  and h["Access-Control-Allow-Credentials"] == "true", "credentials: origin echoed")
            status, h, _ = call("GET", V1 + "/v1/whoami", {"Origin": "http://b.test"})
            check(h["Access-Control-Allow-Origin"] == "http://b.test" and h["Access-Control-Allow-Credentials"] == "true", "actual")
            """)
    }

    /// A bucket's rules: from the bootstrap file, through boto3's put/get/delete_bucket_cors and
    /// /v1's JSON (the same rules both ways); they replace the global flags for the bucket's keys
    /// in both dialects and its share links; limits and refusals as S3 has them.
    @Test func bucketRules() throws {
        try Self.python(["--cors-origin", "http://app.test"], """
            rules = admin.get_bucket_cors(Bucket="pics")["CORSRules"]
            check(rules == [{"ID": "sites", "AllowedHeaders": ["x-amz-*", "content-type"], "AllowedMethods": ["GET", "PUT"],
                             "AllowedOrigins": ["https://*.example.com"], "ExposeHeaders": ["x-amz-meta-owner"],
                             "MaxAgeSeconds": 300}], "bootstrap rules: %r" % rules)
            pre = {"Origin": "https://www.example.com", "Access-Control-Request-Method": "PUT",
                   "Access-Control-Request-Headers": "x-amz-date, Content-Type"}
            for url in (S3 + "/pics/k.jpg", V1 + "/v1/blobs/pics/k.jpg"):
                status, h, _ = call("OPTIONS", url, pre)
                check(status == 200 and cors(h) == {"Access-Control-Allow-Origin": "https://www.example.com",
                      "Access-Control-Allow-Credentials": "true", "Access-Control-Allow-Methods": "GET, PUT",
                      "Access-Control-Allow-Headers": "x-amz-date, content-type", "Access-Control-Max-Age": "300"},
                      "bucket preflight %s: %r" % (url, cors(h)))
                status, _, _ = call("OPTIONS", url, dict(pre, **{"Access-Control-Request-Headers": "x-other"}))
                check(status == 403, "a header no rule allows")
                status, _, _ = call("OPTIONS", url, dict(pre, **{"Access-Control-Request-Method": "DELETE"}))
                check(status == 403, "a method no rule allows")
                status, _, _ = call("OPTIONS", url, dict(pre, Origin="http://app.test"))
                check(status == 403, "the global origin does not reach a bucket with rules")
            status, h, _ = call("GET", S3 + "/pics/none", {"Origin": "https://a.example.com"})
            check(status == 403 and h["Access-Control-Expose-Headers"] == EXPOSED + ", x-amz-meta-owner" and h["Vary"] == "Origin",
                  "rule's ExposeHeader: %r" % dict(h))
            for url in (S3 + "/pics?list-type=2", S3 + "/pics/x", V1 + "/v1/blobs/pics/x", V1 + "/v1/blobs?prefix=pics/"):
                status, h, _ = call("GET", url, ADMIN if "/v1/" in url else {})
                check(h.get("Vary") == "Origin", "Vary on every bucket answer: %s %d" % (url, status))
            # /v1 JSON: the same rules as the XML, both ways.
            status, _, body = call("GET", V1 + "/v1/admin/buckets/pics/cors", ADMIN)
            check(status == 200 and json.loads(body)["rules"][0]["allowed_origins"] == ["https://*.example.com"], "v1 GET")
            new = {"rules": [{"allowed_origins": ["*"], "allowed_methods": ["GET", "HEAD"], "allowed_headers": ["*"]}]}
            status, _, body = call("PUT", V1 + "/v1/admin/buckets/plain/cors", dict(ADMIN, **{"Content-Type": "application/json"}),
                                   json.dumps(new).encode())
            check(status == 200 and json.loads(body)["rules"][0]["allowed_methods"] == ["GET", "HEAD"], "v1 PUT: %d %r" % (status, body))
            check(admin.get_bucket_cors(Bucket="plain")["CORSRules"] == [{"AllowedHeaders": ["*"], "AllowedMethods": ["GET", "HEAD"],
                                                                          "AllowedOrigins": ["*"]}], "seen through S3")
            status, h, _ = call("GET", S3 + "/plain/x", {"Origin": "http://any.test"})
            check(h["Access-Control-Allow-Origin"] == "*" and "Access-Control-Allow-Credentials" not in h, "rule * without credentials")
            status, _, body = call("PUT", V1 + "/v1/admin/buckets/plain/cors", dict(ADMIN, **{"Content-Type": "application/json"}),
                                   json.dumps({"rules": new["rules"] * 101}).encode())
            check(status == 400, "v1: 101 rules refused")
            status, _, _ = call("GET", V1 + "/v1/admin/buckets/plain/cors", {"Authorization": "Bearer reader-token-0123"})
            check(status == 403, "needs admin")
            rule = {"AllowedOrigins": ["*"], "AllowedMethods": ["GET"]}
            check(error(lambda: admin.put_bucket_cors(Bucket="plain", CORSConfiguration={"CORSRules": [rule] * 101}))
                  == ("MalformedXML", 400), "S3: 101 rules refused")
            check(error(lambda: admin.put_bucket_cors(Bucket="plain", CORSConfiguration={"CORSRules": [dict(rule, AllowedMethods=["PATCH"])]}))
                  == ("InvalidRequest", 400), "a method S3 does not know")
            check(error(lambda: admin.put_bucket_cors(Bucket="plain", CORSConfiguration={"CORSRules": [dict(rule, AllowedOrigins=["http://*.*.a"])]}))
                  == ("InvalidRequest", 400), "two wildcards")
            reader = s3("READERKEY0123", "reader-secret-0123")
            check(error(lambda: reader.put_bucket_cors(Bucket="plain", CORSConfiguration={"CORSRules": [rule]})) == ("AccessDenied", 403),
                  "PutBucketCors needs admin")
            check(admin.get_bucket_cors(Bucket="plain")["CORSRules"][0]["AllowedMethods"] == ["GET", "HEAD"], "refusals changed nothing")
            # A share link of a pics key follows the pics rules.
            admin.put_object(Bucket="pics", Key="shared.jpg", Body=b"jpeg")
            status, _, body = call("POST", V1 + "/v1/shares", dict(ADMIN, **{"Content-Type": "application/json"}),
                                   json.dumps({"key": "pics/shared.jpg", "allow": "read"}).encode())
            link = "/s/" + json.loads(body)["id"]
            status, h, body = call("GET", V1 + link, {"Origin": "https://cdn.example.com"})
            check(status == 200 and body == b"jpeg" and h["Access-Control-Allow-Origin"] == "https://cdn.example.com", "share link")
            status, h, _ = call("OPTIONS", V1 + link, {"Origin": "https://cdn.example.com", "Access-Control-Request-Method": "GET"})
            check(status == 200, "share link preflight")
            status, h, _ = call("OPTIONS", V1 + link, {"Origin": "http://app.test", "Access-Control-Request-Method": "GET"})
            check(status == 403, "share link preflight from the global origin")
            admin.delete_bucket_cors(Bucket="plain")
            check(error(lambda: admin.get_bucket_cors(Bucket="plain")) == ("NoSuchCORSConfiguration", 404), "deleted")
            status, _, body = call("GET", V1 + "/v1/admin/buckets/plain/cors", ADMIN)
            check(status == 404 and json.loads(body)["type"].endswith("/setting-not-found"), "v1 after delete")
            status, h, _ = call("GET", S3 + "/plain/x", {"Origin": "http://app.test"})
            check(h["Access-Control-Allow-Origin"] == "http://app.test", "the global flags again")
            status, _, _ = call("GET", V1 + "/v1/admin/buckets/nosuch/cors", ADMIN)
            check(status == 404, "no such bucket")
            """)
    }
}

/// A bucket's CORS rules set on one node of a PostgreSQL cluster answer on the other within
/// about a second (the access version every node polls), and so does their removal.
@Suite(.serialized, .enabled(if: PostgresServer.isInstalled, "PostgreSQL 15 is installed by make deps"))
struct ClusterCORSTests {
    @Test func rulesReachTheOtherNodeWithinTwoSeconds() throws {
        let dir = TempDir()
        let file = dir.file("bootstrap.json", Array(CORSTests.bootstrap.utf8))
        let cluster = try ClusterTests.Cluster(extra: ["--bootstrap", file, "--cors-origin", "http://app.test"])
        try ClusterTests.python("""
            import time
            admin = {"Authorization": "Bearer admin-token-0123", "Content-Type": "application/json"}
            rules = {"rules": [{"allowed_origins": ["https://site.test"], "allowed_methods": ["GET"]}]}
            def preflight(conn, origin):
                return request(conn, "OPTIONS", "/v1/blobs/plain/k", None, {"Origin": origin, "Access-Control-Request-Method": "GET"})[0]
            check(preflight(B, "https://site.test") == 403 and preflight(B, "http://app.test") == 200, "before: the flags")
            check(request(A, "PUT", "/v1/admin/buckets/plain/cors", json.dumps(rules), admin)[0] == 200, "set on A")
            check(preflight(A, "https://site.test") == 200, "at once on A")
            start = time.monotonic()
            while preflight(B, "https://site.test") != 200:
                check(time.monotonic() - start < 2, "B follows within 2 s")
                time.sleep(0.05)
            check(preflight(B, "http://app.test") == 403, "the bucket's rules replace the flags on B")
            check(request(B, "DELETE", "/v1/admin/buckets/plain/cors", None, admin)[0] == 204, "delete on B")
            start = time.monotonic()
            while preflight(A, "http://app.test") != 200:
                check(time.monotonic() - start < 2, "A follows the removal within 2 s")
                time.sleep(0.05)
            """, cluster)
    }
}

import Foundation
import LiveBlobd
import Testing

/// Keys made at run time (`/v1/admin/keys`, issue 22) against the real blobd: a new key works
/// at once with curl, boto3, aws-cli and rclone, sees only its bucket, loses what its new grants
/// drop, and stops at revocation or expiry; bad requests get exact 4xx answers.
@Suite struct KeyAdminTests {
    static let tokens = "admin-token admin,read,write,delete\nreader-token read\ns3 ADMIN admin-secret admin,read,write,delete\n"

    static func start(_ extra: [String] = []) throws -> (BlobdProcess, Int, TempDir) {
        let dir = TempDir()
        let tokens = dir.file("tokens", Array(Self.tokens.utf8))
        chmod(tokens, 0o600)
        let blobd = try BlobdProcess(["--tokens-file", tokens, "--s3-listen", "127.0.0.1:0"] + extra)
        return (blobd, try #require(blobd.s3Port), dir)
    }

    /// A Python prelude: `admin(method, path, body)` calls the admin API with the admin token.
    static let prelude = """
        import os, sys, json, subprocess, time, boto3, botocore
        from botocore.config import Config
        V1, ENDPOINT = os.environ["V1"], os.environ["ENDPOINT"]
        def check(condition, what):
            if not condition:
                sys.exit("FAILED: " + what)
        def call(method, path, token=None, body=None, content_type="application/json"):
            args = ["curl", "-s", "-o", "/dev/stderr", "-w", "%{http_code}", "-X", method]
            if token: args += ["-H", "Authorization: Bearer " + token]
            if body is not None: args += ["-H", "Content-Type: " + content_type, "--data-binary", "@-"]
            r = subprocess.run(args + [V1 + path], input=body if isinstance(body, bytes) or body is None else json.dumps(body).encode(),
                               capture_output=True)
            return int(r.stdout), r.stderr
        def admin(method, path, body=None):
            status, out = call(method, path, "admin-token", body)
            return status, (json.loads(out) if out.startswith(b"{") else out)
        def s3(key, secret):
            return boto3.client("s3", endpoint_url=ENDPOINT, region_name="us-east-1", aws_access_key_id=key,
                                aws_secret_access_key=secret, config=Config(signature_version="s3v4", retries={"max_attempts": 1}))
        def code(fn):
            try:
                fn()
            except botocore.exceptions.ClientError as e:
                return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]
            return None

        """

    static func python(_ script: String, _ blobd: BlobdProcess, port: Int, environment: [String] = []) throws {
        let result = try run("/usr/bin/env", ["V1=\(blobd.baseURL)", "ENDPOINT=http://127.0.0.1:\(port)"] + environment
                             + ["python3", "-c", prelude + script], timeout: 300)
        #expect(result.status == 0, "\(result.stderr)\n\(String(decoding: result.stdout, as: UTF8.self))")
    }

    @Test func aKeyMadeAtRunTimeWorksAtOnceEverywhereAndStopsAtRevocation() throws {
        let (blobd, port, dir) = try Self.start()
        try Self.python("""
            root = s3("ADMIN", "admin-secret")
            for b in ["photos", "other"]:
                root.create_bucket(Bucket=b)
                root.put_object(Bucket=b, Key="seed", Body=b"seed of " + b.encode())
            status, key = admin("POST", "/v1/admin/keys", {"name": "photo app", "grants": ["read:photos", "write:photos"]})
            check(status == 201, "create: %r" % (key,))
            check(sorted(key) == ["access_key_id", "created", "expires", "grants", "id", "name", "read_only", "secret_access_key",
                                  "source", "token"], "the created key's members: %r" % sorted(key))
            check(key["grants"] == ["read:photos", "write:photos"] and key["expires"] is None and key["source"] == "api", "%r" % key)
            token, akid, secret = key["token"], key["access_key_id"], key["secret_access_key"]
            # At once, with curl.
            check(call("PUT", "/v1/blobs/photos/a.jpg", token, b"jpeg", "image/jpeg")[0] == 201, "the new token writes its bucket")
            check(call("GET", "/v1/blobs/other/seed", token)[0] == 403, "and cannot read another")
            whoami = json.loads(call("GET", "/v1/whoami", token)[1])
            check(whoami["principal"] == "key:" + key["id"], "whoami names the key: %r" % whoami)
            # At once, with boto3, aws-cli and rclone.
            app = s3(akid, secret)
            check([b["Name"] for b in app.list_buckets()["Buckets"]] == ["photos"], "ListBuckets shows its bucket only")
            check(code(lambda: app.get_object(Bucket="other", Key="seed")) == ("AccessDenied", 403), "no other bucket")
            env = dict(os.environ, AWS_ACCESS_KEY_ID=akid, AWS_SECRET_ACCESS_KEY=secret, AWS_DEFAULT_REGION="us-east-1")
            env.pop("AWS_CA_BUNDLE", None)
            cli = subprocess.run(["aws", "--endpoint-url", ENDPOINT, "s3", "cp", "-", "s3://photos/cli.txt"], input=b"from aws-cli",
                                 env=env, capture_output=True)
            check(cli.returncode == 0, "aws-cli with the new key: %r" % (cli.stderr,))
            denied = subprocess.run(["aws", "--endpoint-url", ENDPOINT, "s3", "ls", "s3://other"], env=env, capture_output=True)
            check(denied.returncode != 0 and b"AccessDenied" in denied.stderr, "aws-cli cannot list another bucket")
            rclone = subprocess.run(["rclone", "--config", "/dev/null", "lsf", "b:photos"], capture_output=True, env=dict(env,
                                    RCLONE_CONFIG_B_TYPE="s3", RCLONE_CONFIG_B_PROVIDER="Other", RCLONE_CONFIG_B_ACCESS_KEY_ID=akid,
                                    RCLONE_CONFIG_B_SECRET_ACCESS_KEY=secret, RCLONE_CONFIG_B_ENDPOINT=ENDPOINT,
                                    RCLONE_CONFIG_B_REGION="us-east-1"))
            check(rclone.returncode == 0 and sorted(rclone.stdout.split()) == [b"a.jpg", b"cli.txt", b"seed"], "rclone: %r" % (rclone,))
            # Listed and shown without secrets; the tokens file's credentials read-only.
            status, listed = admin("GET", "/v1/admin/keys")
            check(status == 200, "list")
            mine = [k for k in listed["keys"] if k["id"] == key["id"]]
            check(len(mine) == 1 and "token" not in mine[0] and "secret_access_key" not in mine[0], "no secret in the list: %r" % mine)
            files = [k for k in listed["keys"] if k["source"] == "tokens-file"]
            check(len(files) == 3 and all(k["read_only"] for k in files), "tokens-file credentials: %r" % files)
            check(all("admin-token" not in json.dumps(k) for k in listed["keys"]), "no tokens-file secret either")
            check(admin("DELETE", "/v1/admin/keys/" + files[0]["id"])[0] == 409, "a tokens-file credential is read-only")
            check(admin("GET", "/v1/admin/keys/" + key["id"])[1]["name"] == "photo app", "show")
            # New grants take effect at once.
            status, changed = admin("PUT", "/v1/admin/keys/" + key["id"] + "/grants", {"grants": ["read:photos"]})
            check(status == 200 and changed["grants"] == ["read:photos"], "replace grants: %r" % (changed,))
            check(call("PUT", "/v1/blobs/photos/b.jpg", token, b"x")[0] == 403, "write is gone")
            check(call("GET", "/v1/blobs/photos/a.jpg", token) == (200, b"jpeg"), "read stays")
            # Revoked: 401 at once, and the S3 pair is unknown.
            check(admin("DELETE", "/v1/admin/keys/" + key["id"])[0] == 204, "revoke")
            check(call("GET", "/v1/blobs/photos/a.jpg", token)[0] == 401, "a revoked token is 401 at once")
            check(code(lambda: app.get_object(Bucket="photos", Key="a.jpg")) == ("InvalidAccessKeyId", 403), "a revoked S3 key")
            check(admin("DELETE", "/v1/admin/keys/" + key["id"])[0] == 404, "revoking twice")
            """, blobd, port: port)
        _ = dir
    }

    @Test func expiryAndBadRequests() throws {
        let (blobd, port, _) = try Self.start()
        try Self.python("""
            status, key = admin("POST", "/v1/admin/keys", {"name": "brief", "grants": ["read"], "expires_in": 1})
            check(status == 201 and key["expires"] is not None, "a key with an expiry: %r" % (key,))
            check(call("GET", "/v1/blobs?prefix=", key["token"])[0] == 200, "works before its expiry")
            time.sleep(2.2)
            check(call("GET", "/v1/blobs?prefix=", key["token"])[0] == 401, "401 after its expiry")
            for body, what in [({"grants": ["read"]}, "no name"), ({"name": "", "grants": []}, "empty name"),
                               ({"name": "x", "grants": ["fly:*"]}, "bad grant"), ({"name": "x", "grants": "read"}, "grants not a list"),
                               ({"name": "x", "grants": [], "expires_in": 0}, "zero expiry"),
                               ({"name": "x", "grants": [], "expires_in": True}, "a boolean expiry"),
                               ({"name": "x", "grants": [], "expires_in": 1.5}, "a fractional expiry"),
                               ({"name": "x", "grants": [], "expires_in": 10 ** 30}, "a huge expiry"), ([1], "not an object")]:
                check(admin("POST", "/v1/admin/keys", body)[0] == 400, what)
            check(call("POST", "/v1/admin/keys", "admin-token", b"{not json")[0] == 400, "not JSON")
            check(call("POST", "/v1/admin/keys", "admin-token", b"{}", "text/plain")[0] == 415, "not application/json")
            check(call("POST", "/v1/admin/keys", "admin-token", b"x" * 70000)[0] == 413, "too large")
            check(call("POST", "/v1/admin/keys", "reader-token", {"name": "x", "grants": []})[0] == 403, "needs admin:*")
            check(call("GET", "/v1/admin/keys")[0] == 401, "needs a token")
            check(admin("GET", "/v1/admin/keys/k..%2F")[0] == 404, "a malformed id")
            check(admin("PUT", "/v1/admin/keys/knone/grants", {"grants": []})[0] == 404, "grants of an unknown key")
            """, blobd, port: port)
    }
}

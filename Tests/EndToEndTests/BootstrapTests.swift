import Foundation
import LiveBlobd
import Testing

/// `--bootstrap FILE` (issue 22): buckets, keys with the secrets CI chooses, and anonymous
/// grants, applied atomically and idempotently before blobd listens; a bad file exits 2 (the
/// API contract's status; every other bad setting exits 64) and applies nothing.
@Suite struct BootstrapTests {
    static let file = """
        {"buckets": [{"name": "artifacts"}],
         "keys": [{"name": "ci", "grants": ["write:artifacts", "read:artifacts"], "token": "ci-token-0123456789",
                   "access_key_id": "CIKEY0123456789", "secret_access_key": "ci-secret-0123456789"}],
         "anonymous": ["read:artifacts/public/*"]}
        """

    @Test func appliedBeforeListeningAndAgainWithoutChange() throws {
        let dir = TempDir()
        let path = dir.file("bootstrap.json", Array(Self.file.utf8))
        let data = dir.path + "/data"
        for round in 0..<2 {
            let blobd = try BlobdProcess(["--bootstrap", path, "--s3-listen", "127.0.0.1:0"], dataDir: data)
            let port = try #require(blobd.s3Port)
            #expect(try curl(["-X", "PUT", "-H", "Authorization: Bearer ci-token-0123456789", "--data-binary", "built",
                              blobd.baseURL + "/v1/blobs/artifacts/public/app-\(round).tar"]).status == 201)
            #expect(try curl([blobd.baseURL + "/v1/blobs/artifacts/public/app-0.tar"]).body == Array("built".utf8),
                    "anonymous read of the public prefix")
            #expect(try curl([blobd.baseURL + "/v1/blobs?prefix=artifacts/"]).status == 401, "and nothing more")
            #expect(try curl(["-X", "PUT", "--data-binary", "x", blobd.baseURL + "/v1/blobs/open"]).status == 401,
                    "a bootstrap file closes open access")
            let listed = try curl(["-H", "Authorization: Bearer ci-token-0123456789", blobd.baseURL + "/v1/admin/keys"])
            #expect(listed.status == 403, "the ci key is no admin")
            try KeyAdminTests.python("""
                ci = s3("CIKEY0123456789", "ci-secret-0123456789")
                check([b["Name"] for b in ci.list_buckets()["Buckets"]] == ["artifacts"], "the bucket exists")
                ci.put_object(Bucket="artifacts", Key="s3-%d" % \(round), Body=b"x")
                """, blobd, port: port)
            #expect(blobd.stop() == 0)
        }
        // Applied twice: still one key, one bucket (read straight from the index).
        let rows = try run("/usr/bin/env", ["python3", "-c", """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            print(db.execute("SELECT count(*) FROM access_keys").fetchone()[0], db.execute("SELECT count(*) FROM buckets").fetchone()[0])
            """, data + "/index.sqlite"])
        #expect(String(decoding: rows.stdout, as: UTF8.self) == "1 1\n")
    }

    @Test(arguments: [
        ("not json", "is not a JSON object"),
        (#"{"buckets": [{"name": "Bad_Name"}]}"#, "'Bad_Name' is not a valid bucket name"),
        (#"{"keys": [{"name": "x", "grants": ["fly"]}]}"#, "unknown action 'fly'"),
        (#"{"keys": [{"name": "x", "grants": [], "token": "short"}]}"#, "token must be 8 to 256"),
        (#"{"keys": [{"name": "x", "grants": [], "access_key_id": "ONLYTHEID123"}]}"#, "together"),
        (#"{"keys": [{"name": "x", "grants": []}, {"name": "x", "grants": []}]}"#, "two keys are named 'x'"),
        (#"{"buckets": [{"name": "fine"}], "lifecycle": []}"#, "unknown member 'lifecycle'"),
        (#"{"buckets": [{"name": "bkt", "cors": {"rules": [{"allowed_origins": ["*"], "allowed_methods": ["PATCH"]}]}}]}"#,
         "bucket 'bkt': cors: Found unsupported HTTP method in CORS config. Unsupported method is PATCH"),
        (#"{"buckets": [{"name": "bkt", "cors": {"rules": []}}]}"#, "needs at least one rule"),
        (#"{"buckets": [{"name": "bkt", "cors": {"rules": [{"allowed_origins": ["*"], "allowed_methods": ["GET"], "max_age_seconds": true}]}}]}"#,
         "'max_age_seconds' is a whole number"),
        (#"{"buckets": [{"name": "fine", "lifecycle": {"rules": [{"status": "Enabled", "expiration_days": 0}]}}]}"#,
         "bucket 'fine': lifecycle: 'expiration_days' must be a positive integer"),
        (#"{"buckets": [{"name": "fine", "lifecycle": {"rules": [{"status": "Enabled", "noncurrent_days": 0}]}}]}"#,
         "bucket 'fine': lifecycle: 'noncurrent_days' must be a positive integer"),
        (#"{"buckets": [{"name": "fine", "lifecycle": {"rules": [{"status": "Enabled", "expired_object_delete_marker": "yes"}]}}]}"#,
         "bucket 'fine': lifecycle: 'expired_object_delete_marker' is true or false"),
        (#"{"buckets": [{"name": "vers", "versioning": "On"}]}"#, "bucket 'vers': versioning is \"Enabled\" or \"Suspended\""),
        (#"{"buckets": [{"name": "vers", "versioning": true}]}"#, "bucket 'vers': versioning is \"Enabled\" or \"Suspended\""),
        (#"{"buckets": [{"name": "lock", "object_lock": true, "versioning": "Suspended"}]}"#,
         "bucket 'lock': a bucket with object_lock keeps versioning Enabled; it cannot be \"Suspended\""),
        (#"{"buckets": [{"name": "lock", "object_lock": false}]}"#, "bucket 'lock': object_lock cannot be false"),
        (#"{"buckets": [{"name": "lock", "object_lock": 1}]}"#, "bucket 'lock': object_lock is true or {\"default_retention\": {...}}"),
        (#"{"buckets": [{"name": "lock", "object_lock": {"retention": {}}}]}"#, "bucket 'lock': object_lock: unknown member 'retention'"),
        (#"{"buckets": [{"name": "lock", "object_lock": {"default_retention": {"mode": "STRICT", "days": 1}}}]}"#,
         "bucket 'lock': object_lock: default_retention: mode is \"GOVERNANCE\" or \"COMPLIANCE\""),
        (#"{"buckets": [{"name": "lock", "object_lock": {"default_retention": {"mode": "GOVERNANCE", "days": 1, "years": 1}}}]}"#,
         "bucket 'lock': object_lock: default_retention names days or years, one of them"),
        (#"{"buckets": [{"name": "lock", "object_lock": {"default_retention": {"mode": "GOVERNANCE"}}}]}"#,
         "bucket 'lock': object_lock: default_retention names days or years, one of them"),
        (#"{"buckets": [{"name": "lock", "object_lock": {"default_retention": {"mode": "GOVERNANCE", "days": 0}}}]}"#,
         "bucket 'lock': object_lock: default_retention: days is a whole number from 1 to 36500"),
        (#"{"buckets": [{"name": "lock", "object_lock": {"default_retention": {"mode": "COMPLIANCE", "years": 101}}}]}"#,
         "bucket 'lock': object_lock: default_retention: years is a whole number from 1 to 100"),
        (#"{"buckets": [{"name": "lock", "object_lock": {"default_retention": {"mode": "COMPLIANCE", "days": 1.5}}}]}"#,
         "bucket 'lock': object_lock: default_retention: days is a whole number from 1 to 36500"),
        (#"{"buckets": [{"name": "fine", "versions": "Enabled"}]}"#,
         "bucket 'fine': unknown member 'versions' (blobd knows name, cors, lifecycle, notifications, object_lock, versioning)"),
    ])
    func aBadFileExits2AndAppliesNothing(_ text: String, _ message: String) throws {
        let dir = TempDir()
        let path = dir.file("bootstrap.json", Array(text.utf8))
        let result = try run(blobdExecutable(), ["--bootstrap", path, "--data-dir", dir.path + "/data", "--listen", "127.0.0.1:0"],
                             timeout: 30)
        #expect(result.status == 2)
        #expect(result.stderr.contains(message) && result.stderr.contains("nothing was applied"), "\(result.stderr)")
        #expect(!String(decoding: result.stdout, as: UTF8.self).contains("listening"))
    }

    /// A bucket's version rules (NoncurrentVersionExpiration, ExpiredObjectDeleteMarker) from
    /// the file, read back through the admin API as stored.
    @Test func versionLifecycleRules() throws {
        let dir = TempDir()
        let rules = #"{"rules":[{"id":"old","status":"Enabled","prefix":"","noncurrent_days":3,"expired_object_delete_marker":true}]}"#
        let path = dir.file("bootstrap.json", Array(("""
            {"buckets": [{"name": "vers", "lifecycle": \(rules)}],
             "keys": [{"name": "ops", "grants": ["admin:vers"], "token": "ops-token-0123456789"}]}
            """).utf8))
        let blobd = try BlobdProcess(["--bootstrap", path], dataDir: dir.path + "/data")
        let got = try curl(["-H", "Authorization: Bearer ops-token-0123456789", blobd.baseURL + "/v1/admin/buckets/vers/lifecycle"])
        #expect(got.status == 200 && got.text == rules, "\(got.text)")
    }

    /// A bootstrap key that would take a key made at run time's token stops blobd (exit 2) and
    /// leaves the index as it was.
    @Test func aKeyTakingAnotherKeysTokenExits2() throws {
        let dir = TempDir()
        let data = dir.path + "/data"
        let admin = dir.file("tokens", Array("admin-token admin\n".utf8))
        chmod(admin, 0o600)
        let blobd = try BlobdProcess(["--tokens-file", admin], dataDir: data)
        let made = try curl(["-X", "POST", "-H", "Authorization: Bearer admin-token", "-H", "Content-Type: application/json",
                             "--data-binary", #"{"name": "app", "grants": ["read"]}"#, blobd.baseURL + "/v1/admin/keys"])
        #expect(made.status == 201)
        let token = try #require(made.text.split(separator: "\"").drop { $0 != "token" }.dropFirst(2).first)
        #expect(blobd.stop() == 0)
        let clash = dir.file("clash.json", Array(#"{"buckets": [{"name": "never"}], "keys": [{"name": "ci", "grants": [], "token": "\#(token)"}]}"#.utf8))
        let result = try run(blobdExecutable(), ["--bootstrap", clash, "--data-dir", data, "--listen", "127.0.0.1:0"], timeout: 30)
        #expect(result.status == 2)
        #expect(result.stderr.contains("another key has the token or access key id"), "\(result.stderr)")
        let buckets = try run("/usr/bin/env", ["python3", "-c", """
            import sqlite3, sys
            print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM buckets").fetchone()[0])
            """, data + "/index.sqlite"])
        #expect(String(decoding: buckets.stdout, as: UTF8.self) == "0\n", "the refused plan made no bucket")
        let again = try BlobdProcess(["--tokens-file", admin], dataDir: data)
        #expect(try curl(["-H", "Authorization: Bearer \(token)", again.baseURL + "/v1/whoami"]).status == 200, "the key is unchanged")
    }

    /// `blobd check-config --bootstrap FILE` checks the file as blobd would: exit 0 with a
    /// summary, or exit 2 with the reason.
    @Test func checkConfigChecksTheFile() throws {
        let dir = TempDir()
        let good = dir.file("good.json", Array(Self.file.utf8))
        let checked = try run(blobdExecutable(), ["check-config", "--bootstrap", good, "--data-dir", dir.path + "/data"])
        #expect(checked.status == 0, "\(checked.stderr)")
        #expect(String(decoding: checked.stdout, as: UTF8.self).contains("bootstrap: \(good): 1 buckets, 1 keys, 1 anonymous grants\n"))
        let bad = dir.file("bad.json", Array(#"{"anonymous": ["fly"]}"#.utf8))
        let refused = try run(blobdExecutable(), ["check-config", "--bootstrap", bad, "--data-dir", dir.path + "/data"])
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("unknown action 'fly'"), "\(refused.stderr)")
    }
}

import Foundation
import LiveBlobd
import Testing

/// `blobd migrate-index` with versions (issue 25): a single node's versioned and locked buckets
/// on SQLite, moved to PostgreSQL (and moved again, which adds nothing), then served from
/// PostgreSQL with the same versions, bytes, locks, bucket settings and pending events, and the
/// same keys made at run time (a revoked one still refused) and share links.
@Suite(.serialized, .enabled(if: PostgresServer.isInstalled, "PostgreSQL 15 is installed by make deps"))
struct MigrateVersionsTests {
    @Test func versionsAndLocksMoveToPostgres() throws {
        let postgres = try PostgresServer()
        let dir = TempDir("blobd-migrate-versions")
        let dataDir = dir.path + "/data"
        let tokens = dir.file("tokens", Array(GrantMatrixTests.tokensFile.utf8))
        chmod(tokens, 0o600)
        func python(_ blobd: BlobdProcess, _ script: String) throws {
            let port = try #require(blobd.s3Port)
            let result = try run("/usr/bin/env", ["ENDPOINT=http://127.0.0.1:\(port)", "V1=\(blobd.baseURL)", "STATE=\(dir.path)/state.json",
                                                  "python3", "-c", VersioningTests.prelude + Self.snapshot + script], timeout: 300)
            #expect(result.status == 0, "\(result.stderr)\n\(String(decoding: result.stdout, as: UTF8.self))")
        }
        // A webhook nobody answers: the events stay pending, to be moved.
        let serve = ["--tokens-file", tokens, "--s3-listen", "127.0.0.1:0", "--notify-webhook", "hook=http://127.0.0.1:9/x"]
        do {
            let single = try BlobdProcess(serve, dataDir: dataDir)
            try python(single, Self.fill)
            #expect(single.stop() == 0)
        }
        let first = try run(blobdExecutable(), ["migrate-index", "--data-dir", dataDir, "--to", postgres.url])
        let summary = String(decoding: first.stdout, as: UTF8.self)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(summary.contains("8 noncurrent versions and delete markers (8 new), 3 buckets, 6 bucket settings, 0 tus uploads, 0 multipart uploads, 2 pending events, "
                + "1 keys (1 new), 1 share links (1 new), 0 anonymous grant settings"), "\(summary)")
        // Run again over the same index (as after an interruption): nothing is added twice.
        for suffix in ["", "-wal", "-shm"] {
            try? FileManager.default.moveItem(atPath: dataDir + "/index.sqlite.migrated" + suffix, toPath: dataDir + "/index.sqlite" + suffix)
        }
        try FileManager.default.removeItem(atPath: dataDir + "/nodes")
        let again = try run(blobdExecutable(), ["migrate-index", "--data-dir", dataDir, "--to", postgres.url])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(String(decoding: again.stdout, as: UTF8.self).contains("8 noncurrent versions and delete markers (0 new)")
                && String(decoding: again.stdout, as: UTF8.self).contains("1 keys (0 new), 1 share links (0 new)"),
                "\(String(decoding: again.stdout, as: UTF8.self))")

        let node = try BlobdProcess(["--index", postgres.url, "--node-id", "a"] + serve, dataDir: dataDir)
        try python(node, Self.compare)
    }

    /// What a bucket shows: every version and marker (ListObjectVersions, page by page), each
    /// version's bytes and lock, and the bucket settings.
    static let snapshot = """
        def state(bucket):
            listed, args = [], {}
            while True:
                page = admin.list_object_versions(Bucket=bucket, MaxKeys=2, **args)
                for kind in ["Versions", "DeleteMarkers"]:
                    for v in page.get(kind, []):
                        listed.append({f: str(v.get(f)) for f in ["Key", "VersionId", "IsLatest", "ETag", "Size", "LastModified"]})
                if not page["IsTruncated"]:
                    break
                args = {"KeyMarker": page["NextKeyMarker"], "VersionIdMarker": page["NextVersionIdMarker"]}
            listed.sort(key=lambda v: (v["Key"], v["VersionId"]))
            data = {}
            for v in listed:
                if v["ETag"] != "None":
                    got = admin.get_object(Bucket=bucket, Key=v["Key"], VersionId=v["VersionId"])
                    data[v["Key"] + "@" + v["VersionId"]] = [sha(got["Body"].read()), got.get("ObjectLockMode"),
                                                             str(got.get("ObjectLockRetainUntilDate")), got.get("ObjectLockLegalHoldStatus")]
            settings = {"versioning": admin.get_bucket_versioning(Bucket=bucket).get("Status")}
            lock = error(lambda: admin.get_object_lock_configuration(Bucket=bucket))
            settings["lock"] = admin.get_object_lock_configuration(Bucket=bucket)["ObjectLockConfiguration"] if lock is None else lock[0]
            cors = error(lambda: admin.get_bucket_cors(Bucket=bucket))
            settings["cors"] = admin.get_bucket_cors(Bucket=bucket)["CORSRules"] if cors is None else cors[0]
            settings["notifications"] = admin.get_bucket_notification_configuration(Bucket=bucket).get("QueueConfigurations")
            return {"listed": listed, "data": data, "settings": settings}
        def events():
            status, body = curl("GET", "/v1/admin/events", "admin")
            check(status == 200, "the queue: %r" % body)
            return [[e[f] for f in ["id", "target", "bucket", "key", "event"]] for e in json.loads(body)["events"]]
        buckets = ["vault", "plain", "susp"]

        """

    /// On SQLite: a bucket with Object Lock whose versions carry a COMPLIANCE retention, a legal
    /// hold, the default GOVERNANCE retention, or nothing, with delete markers; a versioned
    /// bucket with CORS; a suspended one with null versions. Its state goes to $STATE.
    static let fill = """
        import datetime
        until = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=2)
        admin.create_bucket(Bucket="vault", ObjectLockEnabledForBucket=True)
        ids = [admin.put_object(Bucket="vault", Key="k", Body=b"version %d" % i)["VersionId"] for i in range(3)]
        admin.put_object_retention(Bucket="vault", Key="k", VersionId=ids[0], Retention={"Mode": "COMPLIANCE", "RetainUntilDate": until})
        admin.put_object_legal_hold(Bucket="vault", Key="k", VersionId=ids[1], LegalHold={"Status": "ON"})
        admin.delete_object(Bucket="vault", Key="k")
        admin.put_object(Bucket="vault", Key="gone", Body=b"unlocked")
        admin.delete_object(Bucket="vault", Key="gone")
        admin.put_object_lock_configuration(Bucket="vault", ObjectLockConfiguration={"ObjectLockEnabled": "Enabled",
            "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}})
        admin.put_object(Bucket="vault", Key="k", Body=b"version 3")
        admin.create_bucket(Bucket="plain")
        admin.put_bucket_versioning(Bucket="plain", VersioningConfiguration={"Status": "Enabled"})
        admin.put_bucket_cors(Bucket="plain", CORSConfiguration={"CORSRules": [{"AllowedMethods": ["GET"], "AllowedOrigins": ["*"]}]})
        admin.put_bucket_notification_configuration(Bucket="plain", NotificationConfiguration={"QueueConfigurations": [
            {"Id": "puts", "QueueArn": "arn:blobd:sqs::hook:webhook", "Events": ["s3:ObjectCreated:*"]}]})
        for i in range(2):
            admin.put_object(Bucket="plain", Key="p", Body=b"plain %d" % i)
        admin.create_bucket(Bucket="susp")
        admin.put_object(Bucket="susp", Key="s", Body=b"before versioning")
        admin.put_bucket_versioning(Bucket="susp", VersioningConfiguration={"Status": "Enabled"})
        admin.put_object(Bucket="susp", Key="s", Body=b"versioned")
        admin.put_bucket_versioning(Bucket="susp", VersioningConfiguration={"Status": "Suspended"})
        admin.put_object(Bucket="susp", Key="s", Body=b"null again")
        # A key made at run time with a share link of its own, and a revoked one.
        def make_key(name, grants):
            status, body = curl("POST", "/v1/admin/keys", "admin", json.dumps({"name": name, "grants": grants}).encode(),
                                ["Content-Type: application/json"])
            check(status == 201, "key %s: %r" % (name, body))
            return json.loads(body)
        app = make_key("app", ["read:plain", "write:plain/app/*", "share:plain"])
        gone = make_key("gone", ["read"])
        status, body = curl("POST", "/v1/shares", app["token"], json.dumps({"key": "plain/p", "allow": "read", "max_downloads": 5}).encode(),
                        ["Content-Type: application/json"])
        check(status == 201, "share: %r" % body)
        link = json.loads(body)["id"]
        check(curl("GET", "/s/" + link)[0] == 200, "the link works")
        check(curl("DELETE", "/v1/admin/keys/" + gone["id"], "admin")[0] == 204, "revoked")
        before = {b: state(b) for b in buckets}
        before["keys"] = {"app": app, "gone": gone, "link": link}
        before["events"] = events()
        check(len(before["events"]) == 2, "two events pending: %r" % before["events"])
        check(len(before["vault"]["listed"]) == 7 and len(before["plain"]["listed"]) == 2, "the versions: %r" % before)
        json.dump(before, open(os.environ["STATE"], "w"))

        """

    /// On PostgreSQL: the same state; the locked versions still refuse removal, an unlocked
    /// one goes, and new versions go on after the moved ones; the key made at run time works
    /// with its secret and token and within its grants, the revoked one stays refused, and the
    /// share link downloads.
    static let compare = """
        before = json.load(open(os.environ["STATE"]))
        for b in buckets:
            after = state(b)
            for part in ["listed", "data", "settings"]:
                check(after[part] == before[b][part], "%s %s: %r != %r" % (b, part, after[part], before[b][part]))
        denied, modes = ("AccessDenied", 403), set()
        for name, (_, mode, _, hold) in before["vault"]["data"].items():
            key, vid = name.split("@")
            modes.add((mode, hold))
            if mode == "COMPLIANCE" or hold == "ON":
                check(error(lambda: admin.delete_object(Bucket="vault", Key=key, VersionId=vid, BypassGovernanceRetention=True))[:2]
                      == denied, "still locked: " + name)
            elif mode == "GOVERNANCE":
                check(error(lambda: admin.delete_object(Bucket="vault", Key=key, VersionId=vid))[:2] == denied, "GOVERNANCE: " + name)
        check({("COMPLIANCE", None), (None, "ON"), ("GOVERNANCE", None), (None, None)} <= modes, "every kind of lock: %r" % modes)
        check(events() == before["events"], "the pending events: %r" % events())
        gone = [v for v in before["vault"]["listed"] if v["Key"] == "gone" and v["ETag"] != "None"][0]["VersionId"]
        admin.delete_object(Bucket="vault", Key="gone", VersionId=gone)
        check(error(lambda: admin.get_object(Bucket="vault", Key="gone", VersionId=gone))[:2] == ("NoSuchVersion", 404), "removed")
        newer = admin.put_object(Bucket="plain", Key="p", Body=b"plain 2")["VersionId"]
        _, entries = versions("plain")
        check([e[1] for e in entries][0] == newer and len(entries) == 3, "the new version is the latest: %r" % entries)
        app, revoked = before["keys"]["app"], before["keys"]["gone"]
        client = s3(app["access_key_id"], app["secret_access_key"])
        check(client.get_object(Bucket="plain", Key="p")["Body"].read() == b"plain 2", "the moved key reads with SigV4")
        client.put_object(Bucket="plain", Key="app/new", Body=b"from the app")
        check(code(lambda: client.put_object(Bucket="plain", Key="other", Body=b"x")) == ("AccessDenied", 403), "outside its grants")
        check(code(lambda: client.get_object(Bucket="vault", Key="k")) == ("AccessDenied", 403), "another bucket")
        check(curl("GET", "/v1/blobs/plain/app/new", app["token"])[1] == b"from the app", "its bearer token")
        check(curl("GET", "/v1/blobs/vault/k", app["token"])[0] == 403, "its bearer token, outside its grants")
        check(code(lambda: s3(revoked["access_key_id"], revoked["secret_access_key"]).list_buckets()) == ("InvalidAccessKeyId", 403),
              "the revoked key stays refused")
        check(curl("GET", "/v1/blobs/plain/p", revoked["token"])[0] == 401, "its token too")
        check(curl("GET", "/s/" + before["keys"]["link"]) == (200, b"plain 2"), "the share link still downloads")

        """
}

import Foundation
import LiveBlobd
import Testing

/// The restic scenario of issue 25: a backup on a bucket with Object Lock (COMPLIANCE, one day),
/// then a stolen key holding every grant on the bucket, `admin` included, tries to destroy it
/// by every route S3 and /v1 offer. Every removal of a version fails; its own `restic forget
/// --prune` and its plain deletes only hide the backup behind delete markers, which the owner
/// removes; the repository then checks with `--read-data` and restores byte for byte.
@Suite struct ResticLockTests {
    /// The owner (ADMIN, from GrantMatrixTests), restic's own key (no admin), and the attacker:
    /// every grant on `vault`, over S3 and as a /v1 bearer token.
    static let keys = """
        s3 BACKUP backup-secret read:vault,write:vault,delete:vault
        s3 ATTACKER attacker-secret read:vault,write:vault,create:vault,delete:vault,share:vault,admin:vault
        attacker-token read:vault,write:vault,create:vault,delete:vault,share:vault,admin:vault

        """

    @Test func lockedBackupSurvivesAStolenKey() throws {
        let (blobd, port, dir) = try GrantMatrixTests.start(adding: Self.keys)
        let environment = ["ENDPOINT=http://127.0.0.1:\(port)", "V1=\(blobd.baseURL)", "STATE=\(dir.path)"]
        func python(_ script: String) throws {
            let result = try run("/usr/bin/env", environment + ["python3", "-c", VersioningTests.prelude + Self.helpers + script],
                                 timeout: 300)
            #expect(result.status == 0, "\(result.stderr)\n\(String(decoding: result.stdout, as: UTF8.self))")
        }
        func restic(_ arguments: [String], key: String = "BACKUP", secret: String = "backup-secret") throws -> (status: Int32, output: String) {
            let result = try run("/usr/bin/env", ["AWS_ACCESS_KEY_ID=\(key)", "AWS_SECRET_ACCESS_KEY=\(secret)", "RESTIC_PASSWORD=pw",
                                                  "RESTIC_REPOSITORY=s3:http://127.0.0.1:\(port)/vault",
                                                  "RESTIC_CACHE_DIR=\(dir.path)/cache-\(key)", "restic"] + arguments, timeout: 300)
            return (result.status, String(decoding: result.stdout, as: UTF8.self) + result.stderr)
        }
        try python(Self.setup)
        for step in [["init"], ["backup", dir.path + "/source"], ["check"]] {
            let result = try restic(step)
            try #require(result.status == 0, "restic \(step.joined(separator: " ")): \(result.output)")
        }
        try python(Self.attack)
        // The attacker's restic forgets the snapshot and prunes every pack: restic sees it done.
        let pruned = try restic(["forget", "latest", "--prune"], key: "ATTACKER", secret: "attacker-secret")
        #expect(pruned.status == 0 && pruned.output.contains("old packs"), "the attacker's prune: \(pruned.output)")
        try python(Self.plainDeletes)
        #expect(try restic(["snapshots", "--json"]).output.contains("\"short_id\"") == false, "hidden behind delete markers")
        try python(Self.ownerRestores)
        let checked = try restic(["check", "--read-data"])
        #expect(checked.status == 0, "restic check --read-data: \(checked.output)")
        let restored = try restic(["restore", "latest", "--target", dir.path + "/restored"])
        #expect(restored.status == 0, "restic restore: \(restored.output)")
        try python(Self.compareRestored)
    }

    /// Shared by the phases: the attacker's clients, every version of the bucket page by page,
    /// and the state one phase leaves the next (in $STATE).
    static let helpers = """
        import datetime, random
        STATE = os.environ["STATE"]
        attacker = s3("ATTACKER", "attacker-secret")
        denied = ("AccessDenied", 403)
        def all_versions(client=admin):
            found, markers, args, pages = [], [], {}, 0
            while True:
                page = client.list_object_versions(Bucket="vault", MaxKeys=3, **args)
                pages += 1
                found += [(v["Key"], v["VersionId"], v["ETag"], v["Size"]) for v in page.get("Versions", [])]
                markers += [(m["Key"], m["VersionId"], m["IsLatest"]) for m in page.get("DeleteMarkers", [])]
                if not page["IsTruncated"]:
                    return found, markers, pages
                args = {"KeyMarker": page["NextKeyMarker"], "VersionIdMarker": page["NextVersionIdMarker"]}
        def save(name, value):
            json.dump(value, open(os.path.join(STATE, name), "w"))
        def load(name):
            return json.load(open(os.path.join(STATE, name)))
        def load_tuples(name):
            return [tuple(x) for x in load(name)]
        def current_keys():
            keys, token = [], {}
            while True:
                page = admin.list_objects_v2(Bucket="vault", **token)
                keys += [o["Key"] for o in page.get("Contents", [])]
                if not page.get("IsTruncated"):
                    return sorted(keys)
                token = {"ContinuationToken": page["NextContinuationToken"]}

        """

    /// The locked bucket (as the README says: made with Object Lock, COMPLIANCE 1 day) and the
    /// files to back up: two above restic's 16 MiB pack size, some smaller, ~40 MiB in all.
    static let setup = """
        admin.create_bucket(Bucket="vault", ObjectLockEnabledForBucket=True)
        admin.put_object_lock_configuration(Bucket="vault", ObjectLockConfiguration={"ObjectLockEnabled": "Enabled",
            "Rule": {"DefaultRetention": {"Mode": "COMPLIANCE", "Days": 1}}})
        source = os.path.join(STATE, "source")
        os.makedirs(os.path.join(source, "deep/er"))
        rng = random.Random(25)
        sizes = {"big.bin": 18 << 20, "bigger.bin": 17 << 20 | 12345, "medium.bin": 3 << 20, "deep/small.bin": 70001,
                 "deep/er/tiny.txt": 6, "empty": 0, "deep/er/text.txt": 200000}
        digests = {}
        for name, size in sizes.items():
            data = rng.randbytes(size) if not name.endswith(".txt") else (b"line of text\\n" * size)[:size]
            open(os.path.join(source, name), "wb").write(data)
            digests[name] = sha(data)
        save("digests", sorted(digests.items()))

        """

    /// The attacker removes nothing: each version by id (with and without the bypass header, in
    /// S3 and /v1), DeleteObjects naming every version, retention shortened or removed,
    /// versioning suspended, the bucket deleted, a weaker default lock configuration.
    static let attack = """
        versions, markers, pages = all_versions(attacker)
        check(pages > 2 and len(versions) > 6, "several pages of versions: %d in %d" % (len(versions), pages))
        check(any(k.startswith("data/") for k, _, _, _ in versions), "restic's packs: %r" % versions)
        save("versions", versions)
        for key, vid, _, _ in versions:
            check(error(lambda: attacker.delete_object(Bucket="vault", Key=key, VersionId=vid))[:2] == denied, "delete " + key)
            check(error(lambda: attacker.delete_object(Bucket="vault", Key=key, VersionId=vid, BypassGovernanceRetention=True))[:2]
                  == denied, "delete with the bypass " + key)
            status, body = curl("DELETE", "/v1/blobs/vault/" + key + "?version=" + vid, "attacker-token")
            check(status == 403 and b"object-locked" in body, "/v1 delete of %s: %r" % (key, (status, body)))
        entries = [{"Key": k, "VersionId": v} for k, v, _, _ in versions]
        for bypass in [False, True]:
            answer = attacker.delete_objects(Bucket="vault", Delete={"Objects": entries}, BypassGovernanceRetention=bypass)
            check("Deleted" not in answer, "DeleteObjects deleted: %r" % answer.get("Deleted"))
            check(sorted((e["Key"], e["VersionId"], e["Code"]) for e in answer["Errors"])
                  == sorted((k, v, "AccessDenied") for k, v, _, _ in versions), "every entry an AccessDenied: %r" % answer)
        soon = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
        for key, vid, _, _ in versions:
            for mode in ["COMPLIANCE", "GOVERNANCE"]:
                check(error(lambda: attacker.put_object_retention(Bucket="vault", Key=key, VersionId=vid, BypassGovernanceRetention=True,
                      Retention={"Mode": mode, "RetainUntilDate": soon}))[:2] == denied, "retention shortened to %s: %s" % (mode, key))
            check(error(lambda: attacker.put_object_retention(Bucket="vault", Key=key, VersionId=vid, BypassGovernanceRetention=True,
                  Retention={}))[:2] == denied, "retention removed: " + key)
        check(error(lambda: attacker.put_bucket_versioning(Bucket="vault", VersioningConfiguration={"Status": "Suspended"}))[:2]
              == ("InvalidBucketState", 409), "versioning suspended")
        check(admin.get_bucket_versioning(Bucket="vault")["Status"] == "Enabled", "versioning stays")
        check(error(lambda: attacker.delete_bucket(Bucket="vault"))[:2] == ("BucketNotEmpty", 409), "the bucket deleted")
        check(error(lambda: attacker.put_object_lock_configuration(Bucket="vault",
              ObjectLockConfiguration={"ObjectLockEnabled": "Disabled"}))[:2] == ("MalformedXML", 400), "Object Lock turned off")
        # A weaker default binds only versions written after it: the existing ones keep theirs.
        before = {(k, v): attacker.get_object_retention(Bucket="vault", Key=k, VersionId=v)["Retention"] for k, v, _, _ in versions}
        check(all(r["Mode"] == "COMPLIANCE" for r in before.values()), "every version COMPLIANCE: %r" % before)
        for rule in [{"Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 1}}}, {}]:
            attacker.put_object_lock_configuration(Bucket="vault", ObjectLockConfiguration=dict({"ObjectLockEnabled": "Enabled"}, **rule))
            for key, vid, _, _ in versions:
                check(attacker.get_object_retention(Bucket="vault", Key=key, VersionId=vid)["Retention"] == before[(key, vid)],
                      "the retention of %s stays" % key)
                check(error(lambda: attacker.delete_object(Bucket="vault", Key=key, VersionId=vid, BypassGovernanceRetention=True))[:2]
                      == denied, "still locked: " + key)
        check(all_versions()[:2] == (versions, markers), "nothing removed")

        """

    /// Plain deletes (no version id) of what the prune left succeed as S3 says: each adds a
    /// delete marker, in S3 and /v1 alike, and the bucket looks empty; every version stays.
    static let plainDeletes = """
        keys = current_keys()
        check(len(keys) >= 3 and "config" in keys, "what the prune left: %r" % keys)
        for i, key in enumerate(keys):
            if i % 2 == 0:
                status, _ = curl("DELETE", "/v1/blobs/vault/" + key, "attacker-token")
                check(status == 204, "/v1 DELETE of %s: %d" % (key, status))
            else:
                answer = attacker.delete_object(Bucket="vault", Key=key)
                check(answer.get("DeleteMarker") is True and len(answer.get("VersionId", "")) == 32, "a delete marker: %r" % answer)
        check(current_keys() == [], "hidden")
        versions, markers, _ = all_versions(attacker)
        check(set(load_tuples("versions")) <= set(versions), "every data version stays")

        """

    /// The owner removes each delete marker that is the latest version of its key (outside
    /// restic's locks/): the markers are not locked, and the backup is current again.
    static let ownerRestores = """
        _, markers, _ = all_versions()
        for key, vid, latest in markers:
            if latest and not key.startswith("locks/"):
                admin.delete_object(Bucket="vault", Key=key, VersionId=vid)
        versions, _, _ = all_versions()
        check(set(load_tuples("versions")) <= set(versions), "every data version listed as before")
        before = [k for k, _, _, _ in load_tuples("versions") if not k.startswith("locks/")]
        check(set(before) <= set(current_keys()), "every key of the backup current again: %r" % current_keys())

        """

    /// The restored files are the originals, byte for byte.
    static let compareRestored = """
        # restic restores the absolute path it backed up, under the target.
        restored = os.path.join(STATE, "restored", STATE.lstrip("/"), "source")
        check(os.path.isdir(restored), "restored to %s: %r" % (restored, list(os.walk(os.path.join(STATE, "restored")))[:3]))
        got = {}
        for folder, _, files in os.walk(restored):
            for name in files:
                path = os.path.join(folder, name)
                got[os.path.relpath(path, restored)] = sha(open(path, "rb").read())
        check(sorted(got.items()) == load_tuples("digests"), "restored: %r" % sorted(got.items()))

        """
}

import Foundation
import LiveBlobd
import Testing

/// A bootstrap file makes versioned and Object Lock buckets (issue 35, item 16): `"versioning"`
/// and `"object_lock"` per bucket, answered back by S3's GetBucketVersioning and
/// GetObjectLockConfiguration, and in force for every write.
@Suite struct BootstrapVersionsTests {
    static let key = #"{"name": "ops", "grants": ["admin", "read", "write", "delete"], "token": "ops-token-0123456789", "access_key_id": "OPSKEY0123456789", "secret_access_key": "ops-secret-0123456789"}"#

    static let file = """
        {"buckets": [{"name": "history", "versioning": "Enabled"},
                     {"name": "paused", "versioning": "Suspended"},
                     {"name": "vault", "object_lock": true},
                     {"name": "backups", "object_lock": {"default_retention": {"mode": "COMPLIANCE", "days": 30}}},
                     {"name": "archive", "versioning": "Enabled", "object_lock": {"default_retention": {"mode": "GOVERNANCE", "years": 2}}}],
         "keys": [\(key)]}
        """

    /// What S3 answers of the file's buckets, and the default retention on a new object.
    static let checks = """
        ops = s3("OPSKEY0123456789", "ops-secret-0123456789")
        for bucket, status in [("history", "Enabled"), ("paused", "Suspended"), ("vault", "Enabled"), ("backups", "Enabled"),
                               ("archive", "Enabled")]:
            got = ops.get_bucket_versioning(Bucket=bucket).get("Status")
            check(got == status, "%s: versioning %r" % (bucket, got))
        for bucket in ["history", "paused"]:
            check(code(lambda: ops.get_object_lock_configuration(Bucket=bucket)) == ("ObjectLockConfigurationNotFoundError", 404),
                  bucket + " has no Object Lock")
        locks = {b: ops.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"] for b in ["vault", "backups", "archive"]}
        check(locks["vault"] == {"ObjectLockEnabled": "Enabled"}, "vault: %r" % locks["vault"])
        check(locks["backups"] == {"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "COMPLIANCE", "Days": 30}}},
              "backups: %r" % locks["backups"])
        check(locks["archive"] == {"ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Years": 2}}},
              "archive: %r" % locks["archive"])
        made = ops.put_object(Bucket="backups", Key="db.dump", Body=b"dump")
        head = ops.head_object(Bucket="backups", Key="db.dump")
        days = (head["ObjectLockRetainUntilDate"].timestamp() - time.time()) / 86400
        check(head["ObjectLockMode"] == "COMPLIANCE" and 29.9 < days <= 30, "the default retention: %r" % head)
        check(code(lambda: ops.delete_object(Bucket="backups", Key="db.dump", VersionId=made["VersionId"])) == ("AccessDenied", 403),
              "a locked version stays")
        check(code(lambda: ops.put_bucket_versioning(Bucket="vault", VersioningConfiguration={"Status": "Suspended"}))
              == ("InvalidBucketState", 409), "Object Lock keeps versioning on")
        """

    @Test func versionedAndObjectLockBucketsAnswerThroughS3() throws {
        let dir = TempDir()
        let path = dir.file("bootstrap.json", Array(Self.file.utf8))
        let data = dir.path + "/data"
        for _ in 0..<2 {  // applied again at the next start: nothing changes
            let blobd = try BlobdProcess(["--bootstrap", path, "--s3-listen", "127.0.0.1:0"], dataDir: data)
            try KeyAdminTests.python(Self.checks, blobd, port: try #require(blobd.s3Port))
            #expect(blobd.stop() == 0)
        }
        // A later file cannot suspend a bucket that has Object Lock, nor turn the lock off.
        let suspend = dir.file("suspend.json", Array(#"{"buckets": [{"name": "vault", "versioning": "Suspended"}]}"#.utf8))
        let refused = try run(blobdExecutable(), ["--bootstrap", suspend, "--data-dir", data, "--listen", "127.0.0.1:0"], timeout: 30)
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("bucket 'vault' has Object Lock, which keeps versioning Enabled; it cannot be \"Suspended\"")
                && refused.stderr.contains("nothing was applied"), "\(refused.stderr)")
        let again = try BlobdProcess(["--bootstrap", path, "--s3-listen", "127.0.0.1:0"], dataDir: data)
        try KeyAdminTests.python("""
            ops = s3("OPSKEY0123456789", "ops-secret-0123456789")
            check(ops.get_bucket_versioning(Bucket="vault")["Status"] == "Enabled", "vault stays versioned")
            """, again, port: try #require(again.s3Port))
    }
}

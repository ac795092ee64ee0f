import Foundation
import LiveBlobd
import Testing

/// S3 Object Lock (issue 25) with boto3 against the real blobd: a bucket made with Object Lock
/// (versioning on, not to be suspended), its default retention locking each new version,
/// retention and legal hold per version, GOVERNANCE bypassed only by `admin` naming the bypass
/// header, COMPLIANCE by nobody, and a key holding every data grant unable to remove anything.
@Suite struct ObjectLockTests {
    static func python(_ script: String) throws {
        let (blobd, port, _) = try GrantMatrixTests.start(adding: "s3 WRITER writer-secret read,write,delete\n")
        let result = try run("/usr/bin/env", ["ENDPOINT=http://127.0.0.1:\(port)", "V1=\(blobd.baseURL)",
                                              "python3", "-c", VersioningTests.prelude + script], timeout: 300)
        #expect(result.status == 0, "\(result.stderr)\n\(String(decoding: result.stdout, as: UTF8.self))")
    }

    /// The bucket's configuration, a default COMPLIANCE retention, and deletes by every key.
    @Test func complianceBindsEveryKey() throws {
        try Self.python("""
            import datetime
            writer = s3("WRITER", "writer-secret")
            check(error(lambda: writer.create_bucket(Bucket="vault", ObjectLockEnabledForBucket=True))[:2] == ("AccessDenied", 403),
                  "Object Lock on a new bucket needs admin")
            admin.create_bucket(Bucket="vault", ObjectLockEnabledForBucket=True)
            check(admin.get_bucket_versioning(Bucket="vault")["Status"] == "Enabled", "versioning comes with Object Lock")
            check(admin.get_object_lock_configuration(Bucket="vault")["ObjectLockConfiguration"] == {"ObjectLockEnabled": "Enabled"},
                  "enabled, no default")
            check(error(lambda: admin.put_bucket_versioning(Bucket="vault", VersioningConfiguration={"Status": "Suspended"}))[:2]
                  == ("InvalidBucketState", 409), "versioning stays on")
            admin.put_object_lock_configuration(Bucket="vault", ObjectLockConfiguration={"ObjectLockEnabled": "Enabled",
                "Rule": {"DefaultRetention": {"Mode": "COMPLIANCE", "Days": 1}}})
            got = admin.get_object_lock_configuration(Bucket="vault")["ObjectLockConfiguration"]
            check(got["Rule"]["DefaultRetention"] == {"Mode": "COMPLIANCE", "Days": 1}, "the default: %r" % got)
            vid = writer.put_object(Bucket="vault", Key="backup/snap", Body=b"precious")["VersionId"]
            retention = writer.get_object_retention(Bucket="vault", Key="backup/snap", VersionId=vid)["Retention"]
            left = retention["RetainUntilDate"] - datetime.datetime.now(datetime.timezone.utc)
            check(retention["Mode"] == "COMPLIANCE" and datetime.timedelta(hours=23) < left <= datetime.timedelta(days=1),
                  "the default retention: %r" % retention)
            # A delete marker is allowed; removing the version is not, by any key, bypass or not.
            marker = writer.delete_object(Bucket="vault", Key="backup/snap")
            check(marker["DeleteMarker"] is True, "a delete marker")
            for client in [writer, admin]:
                check(error(lambda: client.delete_object(Bucket="vault", Key="backup/snap", VersionId=vid))[:2] == ("AccessDenied", 403),
                      "the locked version stays")
            check(error(lambda: admin.delete_object(Bucket="vault", Key="backup/snap", VersionId=vid, BypassGovernanceRetention=True))[:2]
                  == ("AccessDenied", 403), "COMPLIANCE is not bypassed")
            gone = admin.delete_objects(Bucket="vault", Delete={"Objects": [{"Key": "backup/snap", "VersionId": vid}]},
                                        BypassGovernanceRetention=True)
            check([e["Code"] for e in gone.get("Errors", [])] == ["AccessDenied"], "DeleteObjects: %r" % gone)
            shorter = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
            check(error(lambda: admin.put_object_retention(Bucket="vault", Key="backup/snap", VersionId=vid, BypassGovernanceRetention=True,
                                                           Retention={"Mode": "COMPLIANCE", "RetainUntilDate": shorter}))[:2]
                  == ("AccessDenied", 403), "COMPLIANCE is not shortened")
            check(admin.get_object(Bucket="vault", Key="backup/snap", VersionId=vid)["Body"].read() == b"precious", "still there")
            # The marker itself may go: the version is current again.
            admin.delete_object(Bucket="vault", Key="backup/snap", VersionId=marker["VersionId"])
            check(writer.get_object(Bucket="vault", Key="backup/snap")["Body"].read() == b"precious", "restored")
            check(error(lambda: admin.delete_bucket(Bucket="vault"))[:2] == ("BucketNotEmpty", 409), "the bucket stays")
            """)
    }

    /// GOVERNANCE yields to admin naming the bypass header only; a legal hold to nobody until
    /// it is off; a bucket without Object Lock takes no retention.
    @Test func governanceAndLegalHold() throws {
        try Self.python("""
            import datetime
            writer = s3("WRITER", "writer-secret")
            until = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=2)
            admin.create_bucket(Bucket="plain")
            admin.put_object(Bucket="plain", Key="k", Body=b"x")
            check(error(lambda: admin.put_object_retention(Bucket="plain", Key="k", Retention={"Mode": "GOVERNANCE",
                  "RetainUntilDate": until}))[:2] == ("InvalidRequest", 400), "no Object Lock, no retention")
            check(error(lambda: admin.get_object_lock_configuration(Bucket="plain"))[:2] == ("ObjectLockConfigurationNotFoundError", 404),
                  "no configuration")
            admin.create_bucket(Bucket="gov", ObjectLockEnabledForBucket=True)
            vid = writer.put_object(Bucket="gov", Key="k", Body=b"data")["VersionId"]
            check(error(lambda: writer.get_object_retention(Bucket="gov", Key="k"))[:2] == ("NoSuchObjectLockConfiguration", 404),
                  "no default, no retention")
            check(error(lambda: writer.put_object_retention(Bucket="gov", Key="k", VersionId=vid, Retention={"Mode": "GOVERNANCE",
                  "RetainUntilDate": until}))[:2] == ("AccessDenied", 403), "locking needs admin")
            admin.put_object_retention(Bucket="gov", Key="k", VersionId=vid, Retention={"Mode": "GOVERNANCE", "RetainUntilDate": until})
            check(error(lambda: writer.delete_object(Bucket="gov", Key="k", VersionId=vid))[:2] == ("AccessDenied", 403), "locked")
            check(error(lambda: writer.delete_object(Bucket="gov", Key="k", VersionId=vid, BypassGovernanceRetention=True))[:2]
                  == ("AccessDenied", 403), "the bypass needs admin")
            check(error(lambda: admin.delete_object(Bucket="gov", Key="k", VersionId=vid))[:2] == ("AccessDenied", 403),
                  "admin without the bypass header")
            admin.put_object_legal_hold(Bucket="gov", Key="k", VersionId=vid, LegalHold={"Status": "ON"})
            check(writer.get_object_legal_hold(Bucket="gov", Key="k", VersionId=vid)["LegalHold"]["Status"] == "ON", "legal hold on")
            check(error(lambda: admin.delete_object(Bucket="gov", Key="k", VersionId=vid, BypassGovernanceRetention=True))[:2]
                  == ("AccessDenied", 403), "a legal hold is not bypassed")
            admin.put_object_legal_hold(Bucket="gov", Key="k", VersionId=vid, LegalHold={"Status": "OFF"})
            removed = admin.delete_object(Bucket="gov", Key="k", VersionId=vid, BypassGovernanceRetention=True)
            check(removed["VersionId"] == vid, "GOVERNANCE bypassed by admin: %r" % removed)
            check(error(lambda: admin.get_object(Bucket="gov", Key="k", VersionId=vid))[:2] == ("NoSuchVersion", 404), "gone")
            # PutObject's lock headers lock the new version in its commit (admin on the key); HEAD names the lock.
            check(error(lambda: writer.put_object(Bucket="gov", Key="h", Body=b"x", ObjectLockLegalHoldStatus="ON"))[:2]
                  == ("AccessDenied", 403), "locking on a write needs admin")
            check(error(lambda: admin.put_object(Bucket="plain", Key="h", Body=b"x", ObjectLockLegalHoldStatus="ON"))[:2]
                  == ("InvalidRequest", 400), "no Object Lock on the bucket")
            check(error(lambda: admin.put_object(Bucket="gov", Key="h", Body=b"x", ObjectLockMode="GOVERNANCE"))[:2]
                  == ("InvalidArgument", 400), "a mode without a date")
            hv = admin.put_object(Bucket="gov", Key="h", Body=b"x", ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=until,
                                  ObjectLockLegalHoldStatus="ON")["VersionId"]
            head = writer.head_object(Bucket="gov", Key="h")
            check((head["ObjectLockMode"], head["ObjectLockLegalHoldStatus"]) == ("COMPLIANCE", "ON")
                  and abs((head["ObjectLockRetainUntilDate"] - until).total_seconds()) < 1, "HEAD names the lock: %r" % head)
            check(error(lambda: admin.delete_object(Bucket="gov", Key="h", VersionId=hv, BypassGovernanceRetention=True))[:2]
                  == ("AccessDenied", 403), "locked at its commit")
            """)
    }

    /// CopyObject and CreateMultipartUpload take the lock headers as PutObject does: admin on
    /// the key, a bucket with Object Lock, mode and date together and to come. A copy's version
    /// gets the lock it asks for, not its source's; a multipart upload's is applied by Complete.
    @Test func lockHeadersOnCopyAndMultipart() throws {
        try Self.python("""
            import datetime
            writer = s3("WRITER", "writer-secret")
            now = datetime.datetime.now(datetime.timezone.utc)
            until, past = now + datetime.timedelta(days=3), now - datetime.timedelta(days=1)
            admin.create_bucket(Bucket="plain")
            admin.create_bucket(Bucket="lkd", ObjectLockEnabledForBucket=True)
            src = admin.put_object(Bucket="lkd", Key="src", Body=b"source", ObjectLockMode="COMPLIANCE",
                                   ObjectLockRetainUntilDate=until, ObjectLockLegalHoldStatus="ON")["VersionId"]
            copy = lambda client, bucket="lkd", **lock: client.copy_object(Bucket=bucket, Key="dst", CopySource={"Bucket": "lkd", "Key": "src"},
                                                                         **lock)
            create = lambda client, bucket="lkd", **lock: client.create_multipart_upload(Bucket=bucket, Key="mp", **lock)
            for name, call in [("CopyObject", copy), ("CreateMultipartUpload", create)]:
                check(error(lambda: call(writer, ObjectLockLegalHoldStatus="ON"))[:2] == ("AccessDenied", 403), name + ": needs admin")
                check(error(lambda: call(admin, "plain", ObjectLockLegalHoldStatus="ON"))[:2] == ("InvalidRequest", 400),
                      name + ": no Object Lock on the bucket")
                check(error(lambda: call(admin, ObjectLockMode="GOVERNANCE"))[:2] == ("InvalidArgument", 400), name + ": mode, no date")
                check(error(lambda: call(admin, ObjectLockRetainUntilDate=until))[:2] == ("InvalidArgument", 400), name + ": date, no mode")
                check(error(lambda: call(admin, ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=past))[:2]
                      == ("InvalidArgument", 400), name + ": a date passed")
            # A plain copy of a locked source is not locked (the bucket has no default).
            plain = copy(admin)["VersionId"]
            check(error(lambda: admin.get_object_retention(Bucket="lkd", Key="dst", VersionId=plain))[:2]
                  == ("NoSuchObjectLockConfiguration", 404), "the source's lock is not copied")
            check(admin.get_object_legal_hold(Bucket="lkd", Key="dst", VersionId=plain)["LegalHold"]["Status"] == "OFF", "no hold copied")
            got = admin.copy_object(Bucket="lkd", Key="dst", CopySource={"Bucket": "lkd", "Key": "src", "VersionId": src},
                                    ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=until)
            cv = got["VersionId"]
            retention = writer.get_object_retention(Bucket="lkd", Key="dst", VersionId=cv)["Retention"]
            check(retention["Mode"] == "GOVERNANCE" and abs((retention["RetainUntilDate"] - until).total_seconds()) < 1,
                  "the copy's own retention: %r" % retention)
            check(error(lambda: admin.delete_object(Bucket="lkd", Key="dst", VersionId=cv))[:2] == ("AccessDenied", 403), "copy locked")
            # Multipart: the lock asked at creation locks the version Complete makes.
            up = admin.create_multipart_upload(Bucket="lkd", Key="mp", ObjectLockMode="COMPLIANCE", ObjectLockRetainUntilDate=until,
                                               ObjectLockLegalHoldStatus="ON")["UploadId"]
            etag = writer.upload_part(Bucket="lkd", Key="mp", UploadId=up, PartNumber=1, Body=b"multi")["ETag"]
            mv = writer.complete_multipart_upload(Bucket="lkd", Key="mp", UploadId=up,
                                                  MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})["VersionId"]
            retention = writer.get_object_retention(Bucket="lkd", Key="mp", VersionId=mv)["Retention"]
            check(retention["Mode"] == "COMPLIANCE" and abs((retention["RetainUntilDate"] - until).total_seconds()) < 1,
                  "Complete applied the retention: %r" % retention)
            check(writer.get_object_legal_hold(Bucket="lkd", Key="mp", VersionId=mv)["LegalHold"]["Status"] == "ON", "and the hold")
            for client in [writer, admin]:
                check(error(lambda: client.delete_object(Bucket="lkd", Key="mp", VersionId=mv, BypassGovernanceRetention=client is admin))[:2]
                      == ("AccessDenied", 403), "the multipart version stays")
            # An upload without lock headers completes unlocked.
            up = admin.create_multipart_upload(Bucket="lkd", Key="mp2")["UploadId"]
            etag = admin.upload_part(Bucket="lkd", Key="mp2", UploadId=up, PartNumber=1, Body=b"free")["ETag"]
            fv = admin.complete_multipart_upload(Bucket="lkd", Key="mp2", UploadId=up,
                                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})["VersionId"]
            admin.delete_object(Bucket="lkd", Key="mp2", VersionId=fv)
            """)
    }
}

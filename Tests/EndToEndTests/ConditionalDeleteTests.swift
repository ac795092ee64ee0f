import Foundation
import LiveBlobd
import Testing

/// S3's conditional deletes (issue 25): If-Match (an ETag or `*`),
/// x-amz-if-match-last-modified-time and x-amz-if-match-size on DeleteObject, and the same per
/// entry of DeleteObjects (ETag, LastModifiedTime, Size), each matching and not, with boto3
/// against the real blobd. A condition that does not hold is 412 PreconditionFailed and the
/// object stays; a condition on an absent key is NoSuchKey.
@Suite struct ConditionalDeleteTests {
    static let prelude = GrantMatrixTests.prelude + """
        import datetime
        admin = s3("ADMIN", "admin-secret")
        second = datetime.timedelta(seconds=1)
        def put(bucket, key, body):
            etag = admin.put_object(Bucket=bucket, Key=key, Body=body)["ETag"]
            return etag, admin.head_object(Bucket=bucket, Key=key)["LastModified"]
        def exists(bucket, key):
            return code(lambda: admin.head_object(Bucket=bucket, Key=key)) is None

        """

    static func python(_ script: String) throws {
        let (blobd, port, _) = try GrantMatrixTests.start()
        let result = try run("/usr/bin/env", ["ENDPOINT=http://127.0.0.1:\(port)", "V1=\(blobd.baseURL)",
                                              "python3", "-c", prelude + script], timeout: 300)
        #expect(result.status == 0, "\(result.stderr)\n\(String(decoding: result.stdout, as: UTF8.self))")
    }

    /// DeleteObject: each condition not matching (412, the object stays), then matching (204,
    /// gone); any condition on an absent key is NoSuchKey; no condition stays 204 either way.
    @Test func deleteObject() throws {
        try Self.python("""
            admin.create_bucket(Bucket="cond")
            etag, modified = put("cond", "k", b"hello")
            failing = [dict(IfMatch='"00000000000000000000000000000000"'), dict(IfMatch="0123"), dict(IfMatchSize=4),
                       dict(IfMatchSize=6), dict(IfMatchLastModifiedTime=modified - second),
                       dict(IfMatchLastModifiedTime=modified + second),
                       dict(IfMatch=etag, IfMatchSize=4), dict(IfMatch=etag, IfMatchSize=5, IfMatchLastModifiedTime=modified + second)]
            for condition in failing:
                check(code(lambda: admin.delete_object(Bucket="cond", Key="k", **condition)) == ("PreconditionFailed", 412),
                      "412 for %r" % condition)
                check(exists("cond", "k"), "still there after %r" % condition)
            # Made after each put: its own modification time.
            holding = [lambda e, m: dict(IfMatch=e), lambda e, m: dict(IfMatch=e.strip('"')), lambda e, m: dict(IfMatch="*"),
                       lambda e, m: dict(IfMatchSize=5), lambda e, m: dict(IfMatchLastModifiedTime=m),
                       lambda e, m: dict(IfMatch=e, IfMatchSize=5, IfMatchLastModifiedTime=m)]
            for make in holding:
                condition = make(*put("cond", "k", b"hello"))
                answer = admin.delete_object(Bucket="cond", Key="k", **condition)
                check(answer["ResponseMetadata"]["HTTPStatusCode"] == 204, "204 for %r" % condition)
                check(not exists("cond", "k"), "gone after %r" % condition)
                check(code(lambda: admin.delete_object(Bucket="cond", Key="k", **condition)) == ("NoSuchKey", 404),
                      "absent key under %r" % condition)
            check(admin.delete_object(Bucket="cond", Key="k")["ResponseMetadata"]["HTTPStatusCode"] == 204, "unconditional on absent")
            # Malformed conditions are refused, and nothing is deleted.
            put("cond", "k", b"hello")
            for header in ["x-amz-if-match-size: -1", "x-amz-if-match-size: 5x", "x-amz-if-match-last-modified-time: yesterday"]:
                r = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "DELETE", "-H", header,
                                    "--aws-sigv4", "aws:amz:us-east-1:s3", "--user", "ADMIN:admin-secret",
                                    os.environ["ENDPOINT"] + "/cond/k"], capture_output=True)
                check(r.stdout == b"400", header + " is 400, got " + r.stdout.decode())
            check(exists("cond", "k"), "malformed conditions delete nothing")
            """)
    }

    /// DeleteObjects: per entry, each condition matching (Deleted) and not (an Error entry
    /// PreconditionFailed, the object stays); a condition on an absent key is NoSuchKey.
    @Test func deleteObjects() throws {
        try Self.python("""
            admin.create_bucket(Bucket="batch")
            objects, expected_deleted, expected_errors = [], [], []
            def entry(key, holds, **condition):
                objects.append(dict(Key=key, **condition))
                (expected_deleted if holds else expected_errors).append(key)
            for name in ["etag", "etag-star", "size", "time", "all"]:
                for holds in [True, False]:
                    key = name + ("-yes" if holds else "-no")
                    etag, modified = put("batch", key, b"12345")
                    if name == "etag": entry(key, holds, ETag=etag if holds else '"ffffffffffffffffffffffffffffffff"')
                    if name == "etag-star": entry(key, True, ETag="*") if holds else None
                    if name == "size": entry(key, holds, Size=5 if holds else 6)
                    if name == "time": entry(key, holds, LastModifiedTime=modified if holds else modified - second)
                    if name == "all": entry(key, holds, ETag=etag, Size=5, LastModifiedTime=modified if holds else modified + second)
            objects.append(dict(Key="absent", ETag='"ffffffffffffffffffffffffffffffff"'))
            objects.append(dict(Key="absent-plain"))
            answer = admin.delete_objects(Bucket="batch", Delete={"Objects": objects})
            deleted = sorted(d["Key"] for d in answer.get("Deleted", []))
            errors = sorted((e["Key"], e["Code"]) for e in answer.get("Errors", []))
            check(deleted == sorted(expected_deleted + ["absent-plain"]), "deleted %r" % deleted)
            want = sorted([(k, "PreconditionFailed") for k in expected_errors] + [("absent", "NoSuchKey")])
            check(errors == want, "errors %r, wanted %r" % (errors, want))
            left = sorted(o["Key"] for o in admin.list_objects_v2(Bucket="batch").get("Contents", []))
            check(left == sorted(expected_errors + ["etag-star-no"]), "left %r" % left)
            """)
    }
}

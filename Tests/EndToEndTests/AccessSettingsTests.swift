import Foundation
import LiveBlobd
import Testing

/// S3 access settings (issue 22): canned ACLs and bucket policies become grants of anonymous
/// or authenticated callers, in every dialect, answered back by the get operations; what
/// blobd does not keep is refused with 501 naming it; setting them needs admin. Real clients:
/// boto3 (signed and unsigned) and curl, against the real blobd (tokens of GrantMatrixTests).
@Suite struct AccessSettingsTests {
    static let prelude = GrantMatrixTests.prelude + """
        from botocore import UNSIGNED
        S3 = os.environ["ENDPOINT"]
        admin = s3("ADMIN", "admin-secret")
        photos = s3("PHOTOS", "photos-secret")
        inbox = s3("INBOX", "inbox-secret")
        anon = boto3.client("s3", endpoint_url=S3, region_name="us-east-1",
                            config=Config(signature_version=UNSIGNED, retries={"max_attempts": 1}))
        def s3curl(method, path, data=None):
            args = ["curl", "-s", "-o", "/dev/stderr", "-w", "%{http_code}", "-X", method]
            if data is not None: args += ["--data-binary", "@-"]
            r = subprocess.run(args + [S3 + path], input=data, capture_output=True)
            return int(r.stdout), r.stderr
        def message(call):
            try:
                call()
            except botocore.exceptions.ClientError as e:
                return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Message"]
            return None
        def groups(acl):
            return sorted((g["Grantee"].get("URI", g["Grantee"].get("ID")).rsplit("/", 1)[-1], g["Permission"]) for g in acl["Grants"])
        def keys(client, bucket, prefix=""):
            return [o["Key"] for o in client.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])]
        def policy(*statements):
            return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})
        def allow(action, resource, **extra):
            return dict({"Effect": "Allow", "Principal": "*", "Action": action, "Resource": resource}, **extra)

        """

    static func python(_ script: String) throws {
        let (blobd, port, _) = try GrantMatrixTests.start()
        let result = try run("/usr/bin/env", ["ENDPOINT=http://127.0.0.1:\(port)", "V1=\(blobd.baseURL)",
                                              "python3", "-c", prelude + script], timeout: 300)
        #expect(result.status == 0, "\(result.stderr)\n\(String(decoding: result.stdout, as: UTF8.self))")
    }

    /// public-read (on CreateBucket, then PutBucketAcl): anonymous curl, unsigned boto3 and /v1
    /// read and list it, nobody anonymous writes it; private takes it back at once; public-read-write
    /// lets anonymous callers write (not delete); an object's public-read opens that key only.
    @Test func cannedACLs() throws {
        try Self.python("""
            admin.create_bucket(Bucket="pubr", ACL="public-read")
            admin.put_object(Bucket="pubr", Key="a.txt", Body=b"hello")
            check(groups(admin.get_bucket_acl(Bucket="pubr")) == [("AllUsers", "READ"), ("blobd", "FULL_CONTROL")], "get_bucket_acl")
            check(s3curl("GET", "/pubr/a.txt") == (200, b"hello"), "anonymous curl GET")
            check(s3curl("GET", "/pubr?list-type=2")[0] == 200, "anonymous curl listing")
            check(anon.get_object(Bucket="pubr", Key="a.txt")["Body"].read() == b"hello", "unsigned boto3 GET")
            check(keys(anon, "pubr") == ["a.txt"], "unsigned boto3 listing")
            check(curl("GET", "/v1/blobs/pubr/a.txt") == (200, b"hello"), "anonymous /v1 GET")
            check(curl("GET", "/v1/blobs?prefix=pubr/")[0] == 200, "anonymous /v1 listing")
            check(code(lambda: anon.put_object(Bucket="pubr", Key="b", Body=b"x")) == ("AccessDenied", 403), "no anonymous write")
            check(s3curl("PUT", "/pubr/b", b"x")[0] == 403, "no anonymous curl PUT")
            check(problem(curl("PUT", "/v1/blobs/pubr/b", data=b"x")) == (401, "unauthorized"), "no anonymous /v1 PUT")
            check(code(lambda: anon.delete_object(Bucket="pubr", Key="a.txt")) == ("AccessDenied", 403), "no anonymous delete")
            check(code(lambda: anon.get_object(Bucket="photos", Key="x")) == ("AccessDenied", 403), "other buckets stay closed")
            admin.put_bucket_acl(Bucket="pubr", ACL="private")
            check(groups(admin.get_bucket_acl(Bucket="pubr")) == [("blobd", "FULL_CONTROL")], "private again")
            check(problem(curl("GET", "/v1/blobs/pubr/a.txt")) == (401, "unauthorized"), "private at once on /v1")
            check(code(lambda: anon.get_object(Bucket="pubr", Key="a.txt")) == ("AccessDenied", 403), "private at once on S3")
            # public-read-write: read and write, not delete.
            admin.put_bucket_acl(Bucket="pubr", ACL="public-read-write")
            check(groups(admin.get_bucket_acl(Bucket="pubr")) == [("AllUsers", "READ"), ("AllUsers", "WRITE"), ("blobd", "FULL_CONTROL")],
                  "public-read-write answered back")
            anon.put_object(Bucket="pubr", Key="by-anyone", Body=b"w")
            check(curl("PUT", "/v1/blobs/pubr/by-v1", data=b"v")[0] == 201, "anonymous /v1 write")
            check(admin.get_object(Bucket="pubr", Key="by-anyone")["Body"].read() == b"w", "anonymous write stored")
            check(code(lambda: anon.delete_object(Bucket="pubr", Key="by-anyone")) == ("AccessDenied", 403), "no anonymous delete")
            # An object's ACL: that key only, and only while it says so.
            admin.create_bucket(Bucket="objs")
            admin.put_object(Bucket="objs", Key="open.txt", Body=b"open")
            admin.put_object(Bucket="objs", Key="closed.txt", Body=b"closed")
            admin.put_object_acl(Bucket="objs", Key="open.txt", ACL="public-read")
            check(groups(admin.get_object_acl(Bucket="objs", Key="open.txt")) == [("AllUsers", "READ"), ("blobd", "FULL_CONTROL")],
                  "get_object_acl")
            check(groups(admin.get_object_acl(Bucket="objs", Key="closed.txt")) == [("blobd", "FULL_CONTROL")], "others private")
            check(s3curl("GET", "/objs/open.txt") == (200, b"open"), "public object")
            check(curl("GET", "/v1/blobs/objs/open.txt") == (200, b"open"), "public object on /v1")
            check(s3curl("GET", "/objs/closed.txt")[0] == 403, "its neighbour stays closed")
            check(code(lambda: anon.list_objects_v2(Bucket="objs")) == ("AccessDenied", 403), "no listing from an object ACL")
            check(code(lambda: admin.put_object_acl(Bucket="objs", Key="none", ACL="public-read")) == ("NoSuchKey", 404), "no object")
            # Deleting a bucket drops its settings: made again, it is private.
            for key in ["a.txt", "by-anyone", "by-v1"]: admin.delete_object(Bucket="pubr", Key=key)
            admin.delete_bucket(Bucket="pubr")
            admin.create_bucket(Bucket="pubr")
            admin.put_object(Bucket="pubr", Key="a.txt", Body=b"again")
            check(groups(admin.get_bucket_acl(Bucket="pubr")) == [("blobd", "FULL_CONTROL")], "a bucket made again is private")
            check(s3curl("GET", "/pubr/a.txt")[0] == 403, "and closed")
            """)
    }

    /// authenticated-read: a key with no grant on the bucket reads and lists it; anonymous
    /// callers do not; its whoami shows the grant.
    @Test func authenticatedRead() throws {
        try Self.python("""
            admin.create_bucket(Bucket="team", ACL="authenticated-read")
            admin.put_object(Bucket="team", Key="plan.txt", Body=b"plan")
            check(groups(admin.get_bucket_acl(Bucket="team")) == [("AuthenticatedUsers", "READ"), ("blobd", "FULL_CONTROL")], "acl")
            check(inbox.get_object(Bucket="team", Key="plan.txt")["Body"].read() == b"plan", "any key reads")
            check(keys(inbox, "team") == ["plan.txt"], "any key lists")
            check(curl("GET", "/v1/blobs/team/plan.txt", "inbox") == (200, b"plan"), "any token reads on /v1")
            check("read:team" in json.loads(curl("GET", "/v1/whoami", "inbox")[1])["grants"], "whoami shows it")
            check(code(lambda: inbox.put_object(Bucket="team", Key="x", Body=b"x")) == ("AccessDenied", 403), "not write")
            check(code(lambda: anon.get_object(Bucket="team", Key="plan.txt")) == ("AccessDenied", 403), "anonymous S3 refused")
            check(problem(curl("GET", "/v1/blobs/team/plan.txt")) == (401, "unauthorized"), "anonymous /v1 refused")
            check(json.loads(curl("GET", "/v1/whoami")[1])["grants"] == ["read:pub/docs/*"], "not an anonymous grant")
            """)
    }

    /// A bucket policy for a public prefix: only that prefix is readable and listable, in
    /// every dialect; the policy and its status are answered back; deleting it closes it.
    @Test func publicPrefixPolicy() throws {
        try Self.python("""
            admin.create_bucket(Bucket="site")
            for key in ["public/index.html", "public/css/a.css", "private/secret"]:
                admin.put_object(Bucket="site", Key=key, Body=key.encode())
            check(code(lambda: admin.get_bucket_policy(Bucket="site")) == ("NoSuchBucketPolicy", 404), "no policy yet")
            check(admin.get_bucket_policy_status(Bucket="site")["PolicyStatus"]["IsPublic"] is False, "not public yet")
            text = policy(allow("s3:GetObject", "arn:aws:s3:::site/public/*"),
                          allow(["s3:ListBucket"], "arn:aws:s3:::site", Condition={"StringLike": {"s3:prefix": ["public/*"]}}))
            admin.put_bucket_policy(Bucket="site", Policy=text)
            check(admin.get_bucket_policy(Bucket="site")["Policy"] == text, "get_bucket_policy answers it back")
            check(admin.get_bucket_policy_status(Bucket="site")["PolicyStatus"]["IsPublic"] is True, "public")
            check(s3curl("GET", "/site/public/index.html") == (200, b"public/index.html"), "anonymous curl inside")
            check(anon.get_object(Bucket="site", Key="public/css/a.css")["Body"].read() == b"public/css/a.css", "unsigned boto3 inside")
            check(keys(anon, "site", "public/") == ["public/css/a.css", "public/index.html"], "listing inside")
            check(curl("GET", "/v1/blobs/site/public/index.html") == (200, b"public/index.html"), "/v1 inside")
            check(s3curl("GET", "/site/private/secret")[0] == 403, "outside the prefix")
            check(problem(curl("GET", "/v1/blobs/site/private/secret")) == (401, "unauthorized"), "/v1 outside")
            check(code(lambda: anon.list_objects_v2(Bucket="site")) == ("AccessDenied", 403), "no listing of the whole bucket")
            check(code(lambda: anon.put_object(Bucket="site", Key="public/x", Body=b"x")) == ("AccessDenied", 403), "no write")
            admin.delete_bucket_policy(Bucket="site")
            check(code(lambda: admin.get_bucket_policy(Bucket="site")) == ("NoSuchBucketPolicy", 404), "deleted")
            check(s3curl("GET", "/site/public/index.html")[0] == 403, "closed at once")
            check(problem(curl("GET", "/v1/blobs/site/public/index.html")) == (401, "unauthorized"), "closed on /v1")
            """)
    }

    /// Each element blobd does not keep is refused with 501 naming it, a malformed policy
    /// with MalformedPolicy, and nothing is stored; setting ACLs and policies needs admin.
    @Test func refusalsAndAdmin() throws {
        try Self.python("""
            check(code(lambda: photos.create_bucket(Bucket="photos", ACL="public-read")) == ("AccessDenied", 403),
                  "a public bucket needs admin, not only write")
            check(code(lambda: admin.head_bucket(Bucket="photos")) == ("404", 404), "and is not made")
            photos.create_bucket(Bucket="photos", ACL="private")
            admin.put_object(Bucket="photos", Key="k", Body=b"k")
            obj = "arn:aws:s3:::photos/*"
            refused = [
                (dict(allow("s3:GetObject", obj), Effect="Deny"), "Effect Deny"),
                (dict(allow("s3:GetObject", obj), Principal={"AWS": "arn:aws:iam::123456789012:root"}), "Principal"),
                (allow("s3:GetObjectVersion", obj), "Action s3:GetObjectVersion"),
                (allow("s3:*", obj), "Action s3:*"),
                (allow("s3:ListBucket", "arn:aws:s3:::photos"), "s3:ListBucket on the whole bucket"),
                (allow("s3:GetObject", obj, Condition={"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}}), "Condition on s3:GetObject"),
                ({"Effect": "Allow", "Principal": "*", "NotAction": "s3:DeleteObject", "Resource": obj}, "NotAction"),
                (allow("s3:GetObject", "arn:aws:s3:::photos/a*b"), "Resource arn:aws:s3:::photos/a*b"),
            ]
            for statement, element in refused:
                answer = message(lambda: admin.put_bucket_policy(Bucket="photos", Policy=policy(statement)))
                check(answer is not None and answer[:2] == ("NotImplemented", 501) and element in answer[2], "%s: %r" % (element, answer))
            for text in ["{", json.dumps({"Statement": []}), policy(allow("s3:GetObject", "arn:aws:s3:::other/*"))]:
                check(code(lambda: admin.put_bucket_policy(Bucket="photos", Policy=text)) == ("MalformedPolicy", 400), "malformed " + text)
            check(code(lambda: admin.get_bucket_policy(Bucket="photos")) == ("NoSuchBucketPolicy", 404), "nothing was stored")
            for acl, element in [("log-delivery-write", "log-delivery-write"), ("aws-exec-read", "aws-exec-read")]:
                answer = message(lambda: admin.put_bucket_acl(Bucket="photos", ACL=acl))
                check(answer[:2] == ("NotImplemented", 501) and element in answer[2], "%s: %r" % (acl, answer))
            answer = message(lambda: admin.put_object_acl(Bucket="photos", Key="k", ACL="public-read-write"))
            check(answer[:2] == ("NotImplemented", 501) and "public-read-write" in answer[2], "object public-read-write: %r" % (answer,))
            answer = message(lambda: admin.put_bucket_acl(Bucket="photos", GrantRead="uri=http://acs.amazonaws.com/groups/global/AllUsers"))
            check(answer[:2] == ("NotImplemented", 501) and "x-amz-grant-read" in answer[2].lower(), "grant header: %r" % (answer,))
            owner = {"ID": "blobd", "DisplayName": "blobd"}
            body = {"Owner": owner, "Grants": [{"Grantee": {"Type": "Group", "URI": "http://acs.amazonaws.com/groups/global/AllUsers"},
                                                "Permission": "READ"}]}
            answer = message(lambda: admin.put_bucket_acl(Bucket="photos", AccessControlPolicy=body))
            check(answer[:2] == ("NotImplemented", 501) and "AccessControlPolicy" in answer[2], "ACL body: %r" % (answer,))
            check(code(lambda: admin.put_object(Bucket="photos", Key="p", Body=b"p", ACL="public-read")) == ("NotImplemented", 501),
                  "an upload's public ACL stays refused")
            check(groups(admin.get_bucket_acl(Bucket="photos")) == [("blobd", "FULL_CONTROL")], "nothing was set")
            # Without admin: AccessDenied, even with read and write on the whole bucket.
            good = policy(allow("s3:GetObject", obj))
            for what, call in [("put_bucket_acl", lambda: photos.put_bucket_acl(Bucket="photos", ACL="public-read")),
                               ("put_object_acl", lambda: photos.put_object_acl(Bucket="photos", Key="k", ACL="public-read")),
                               ("put_bucket_policy", lambda: photos.put_bucket_policy(Bucket="photos", Policy=good)),
                               ("delete_bucket_policy", lambda: photos.delete_bucket_policy(Bucket="photos")),
                               ("anonymous put_bucket_acl", lambda: anon.put_bucket_acl(Bucket="photos", ACL="public-read"))]:
                check(code(call) == ("AccessDenied", 403), what)
            check(s3curl("GET", "/photos/k")[0] == 403, "photos stays private")
            """)
    }
}

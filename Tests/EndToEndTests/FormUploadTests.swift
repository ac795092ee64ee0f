import Foundation
import LiveBlobd
import Testing

/// S3 POST Object (issue 24): forms made by boto3's `generate_presigned_post` (SigV4 and
/// SigV2), posted with `requests`; every violated condition stores nothing.
@Suite struct FormUploadTests {
    static let script = """
        import hashlib, time, base64, zlib, requests
        def form(version):
            return boto3.client("s3", endpoint_url=S3, region_name="us-east-1", aws_access_key_id="ADMINKEY0123",
                                aws_secret_access_key="admin-secret-0123",
                                config=Config(signature_version=version, s3={"addressing_style": "path"}))
        def keys(prefix):
            return [o["Key"] for o in admin.list_objects_v2(Bucket="plain", Prefix=prefix).get("Contents", [])]
        def post(p, data, fields=None, **kw):
            return requests.post(p["url"], data=fields or p["fields"], files={"file": ("photo 1.txt", data)}, **kw)
        for version in ("s3v4", "s3"):
            c = form(version)
            p = c.generate_presigned_post("plain", version + "/${filename}", Fields={"Content-Type": "text/plain",
                "success_action_status": "201", "x-amz-meta-owner": "ann"},
                Conditions=[["starts-with", "$key", version + "/"], {"Content-Type": "text/plain"},
                            {"success_action_status": "201"}, ["eq", "$x-amz-meta-owner", "ann"],
                            ["content-length-range", 1, 1000]], ExpiresIn=600)
            r = post(p, b"hello form", headers={"Origin": "http://app.test"})
            check(r.status_code == 201, "%s: %d %s" % (version, r.status_code, r.text))
            check("<Key>%s/photo 1.txt</Key>" % version in r.text and "<Bucket>plain</Bucket>" in r.text, "PostResponse " + r.text)
            check(r.headers["ETag"] == '"%s"' % hashlib.md5(b"hello form").hexdigest(), "ETag")
            check(r.headers["Access-Control-Allow-Origin"] == "http://app.test", "POST answers carry CORS headers")
            o = admin.get_object(Bucket="plain", Key=version + "/photo 1.txt")
            check(o["Body"].read() == b"hello form" and o["ContentType"] == "text/plain" and o["Metadata"] == {"owner": "ann"}, "stored")
            r = post(p, b"x" * 1001)
            check(r.status_code == 400 and "<Code>EntityTooLarge</Code>" in r.text, "too large: " + r.text)
            r = post(p, b"")
            check(r.status_code == 400 and "<Code>EntityTooSmall</Code>" in r.text, "too small: " + r.text)
            r = post(p, b"abc", dict(p["fields"], key="elsewhere/${filename}"))
            check(r.status_code == 403 and "<Code>AccessDenied</Code>" in r.text and "starts-with" in r.text, "key: " + r.text)
            r = post(p, b"abc", dict(p["fields"], **{"x-amz-meta-other": "1"}))
            check(r.status_code == 403 and "Extra input fields: x-amz-meta-other" in r.text, "extra field: " + r.text)
            r = post(p, b"abc", dict(p["fields"], **{"Content-Type": "text/html"}))
            check(r.status_code == 403 and "Policy Condition failed" in r.text, "content type: " + r.text)
            sig = "x-amz-signature" if version == "s3v4" else "signature"
            r = post(p, b"abc", dict(p["fields"], **{sig: p["fields"][sig][:-4] + "AAAA"}))
            check(r.status_code == 403 and "<Code>SignatureDoesNotMatch</Code>" in r.text, "signature: " + r.text)
            check(keys(version + "/") == [version + "/photo 1.txt"], "nothing else stored: %r" % keys(version + "/"))
        c = form("s3v4")
        p = c.generate_presigned_post("plain", "late/k", Conditions=[["content-length-range", 0, 10]], ExpiresIn=1)
        time.sleep(2.1)
        r = post(p, b"abc")
        check(r.status_code == 403 and "Policy expired" in r.text and keys("late/") == [], "expired: " + r.text)
        p = c.generate_presigned_post("plain", "redir/k", Fields={"success_action_redirect": "http://app.test/done?x=1"},
                                      Conditions=[{"success_action_redirect": "http://app.test/done?x=1"}])
        r = post(p, b"abc", allow_redirects=False)
        check(r.status_code == 303 and r.headers["Location"] == "http://app.test/done?x=1&bucket=plain&key=redir/k&etag=%22"
              + hashlib.md5(b"abc").hexdigest() + "%22", "redirect: %d %r" % (r.status_code, r.headers.get("Location")))
        p = c.generate_presigned_post("plain", "plain204/k")
        r = post(p, b"abc")
        check(r.status_code == 204 and r.text == "", "204 by default")
        crc = base64.b64encode(zlib.crc32(b"abc").to_bytes(4, "big")).decode()
        p = c.generate_presigned_post("plain", "sum/k", Fields={"x-amz-checksum-crc32": crc}, Conditions=[{"x-amz-checksum-crc32": crc}])
        check(post(p, b"abc").status_code == 204, "checksum verified")
        r = post(p, b"abd")
        check(r.status_code == 400 and "<Code>BadDigest</Code>" in r.text, "checksum mismatch: " + r.text)
        check(admin.get_object(Bucket="plain", Key="sum/k")["Body"].read() == b"abc", "the mismatch stored nothing")
        big = bytes(range(256)) * (24 * 4096)
        p = c.generate_presigned_post("plain", "big/k", Conditions=[["content-length-range", 0, 30 << 20]])
        check(post(p, big).status_code == 204, "24 MiB streamed")
        check(hashlib.sha256(admin.get_object(Bucket="plain", Key="big/k")["Body"].read()).digest() == hashlib.sha256(big).digest(), "big")
        reader = boto3.client("s3", endpoint_url=S3, region_name="us-east-1", aws_access_key_id="READERKEY0123",
                              aws_secret_access_key="reader-secret-0123", config=Config(signature_version="s3v4"))
        p = reader.generate_presigned_post("plain", "ro/k")
        r = post(p, b"abc")
        check(r.status_code == 403 and "<Code>AccessDenied</Code>" in r.text and keys("ro/") == [], "needs write: " + r.text)
        r = requests.post(S3 + "/plain", data={"key": "anon/k"}, files={"file": ("a", b"abc")})
        check(r.status_code == 403 and keys("anon/") == [], "anonymous without grants: " + r.text)
        """

    @Test func presignedPostForms() throws {
        try CORSTests.python(["--cors-origin", "http://app.test"], Self.script)
    }

    /// tusd's pre-finish hook sees a form upload as it sees a PutObject (`key` is BUCKET/KEY),
    /// and its rejection stores nothing; pre-create is not asked (the key is known only once the
    /// form's fields are in).
    @Test func preFinishHookSeesFormUploads() throws {
        let dir = TempDir()
        let log = dir.path + "/hooks.jsonl"
        let (hook, blobd, s3Port) = try HookTests.start(hookLog: log, dir: dir)
        defer { kill(hook.processIdentifier, SIGKILL) }
        try HookTests.python("""
            import requests
            s3.create_bucket(Bucket="forms")
            r = requests.post(ENDPOINT + "/forms", data={"key": "late-reject.txt"}, files={"file": ("a.txt", b"late")})
            check(r.status_code == 422 and r.text == "too late", "rejected at pre-finish: %d %r" % (r.status_code, r.text))
            check(code(lambda: s3.head_object(Bucket="forms", Key="late-reject.txt")) == 404, "nothing stored")
            r = requests.post(ENDPOINT + "/forms", data={"key": "fine.txt"}, files={"file": ("a.txt", b"fine")})
            check(r.status_code == 204 and s3.get_object(Bucket="forms", Key="fine.txt")["Body"].read() == b"fine", "stored")
            check([h["Type"] for h in hooks()] == ["pre-finish", "pre-finish"], "hooks: %r" % [h["Type"] for h in hooks()])
            check(hooks()[1]["Event"]["Upload"]["MetaData"]["key"] == "forms/fine.txt", "the hook's key: %r" % hooks()[1])
            """, blobd, s3Port: s3Port, log: log)
    }
}

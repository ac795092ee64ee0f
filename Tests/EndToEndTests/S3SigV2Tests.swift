import Foundation
import LiveBlobd
import Testing

/// Item 16 of issue 20: SigV2, which `aws s3 presign` and boto3's default
/// `generate_presigned_url` still make, works end to end, with SigV4's checks.
@Suite struct S3SigV2Tests {
    /// boto3's and aws-cli's SigV2 presigned URLs used by curl, and a SigV2 boto3 client
    /// (`signature_version="s3"`) through objects, listing, copies, batch delete and multipart.
    @Test func boto3AndAWSCLIPresignedURLsWork() throws {
        let (blobd, port, dir) = try S3AuthTests.start()
        try S3Tests.python(S3AuthTests.helpers + """
            import tempfile
            s3.create_bucket(Bucket="vtwo")
            s3.put_object(Bucket="vtwo", Key="a b+c.txt", Body=b"presigned by v2")
            default = boto3.client("s3", endpoint_url=os.environ["ENDPOINT"], region_name="us-east-1",
                                   aws_access_key_id=os.environ["KEY"], aws_secret_access_key=os.environ["SECRET"])
            get = default.generate_presigned_url("get_object", Params={"Bucket": "vtwo", "Key": "a b+c.txt"})
            check("AWSAccessKeyId=" in get and "Signature=" in get, "boto3's default presigns with SigV2: " + get)
            check(curl(get) == (200, b"presigned by v2"), "boto3's default presigned GET: %r" % (curl(get),))
            put = default.generate_presigned_url("put_object", Params={"Bucket": "vtwo", "Key": "up", "ContentType": "text/plain"})
            check(curl(put, "-X", "PUT", "-H", "Content-Type: text/plain", "--data-binary", "by curl")[0] == 200, "presigned PUT")
            got = s3.get_object(Bucket="vtwo", Key="up")
            check(got["Body"].read() == b"by curl" and got["ContentType"] == "text/plain", "stored as signed")

            # botocore moves a presigned PUT's Content-Type and metadata into the query: they are the object's.
            put = default.generate_presigned_url("put_object", Params={"Bucket": "vtwo", "Key": "typed", "ContentType": "text/csv",
                                                                       "Metadata": {"who": "signer"}})
            check("x-amz-meta-who=signer" in put, "metadata in the query: " + put)
            check(curl(put, "-X", "PUT", "-H", "Content-Type:", "--data-binary", "a,b")[0] == 200, "presigned PUT, type in the query")
            got = s3.head_object(Bucket="vtwo", Key="typed")
            check(got["ContentType"] == "text/csv" and got["Metadata"] == {"who": "signer"}, "the signer's type and metadata: %r" % got)
            answer = curl(put.replace("signer", "someone"), "-X", "PUT", "-H", "Content-Type:", "--data-binary", "a,b")
            check(error(answer) == (403, "SignatureDoesNotMatch"), "other metadata in the query: %r" % (answer,))

            home = tempfile.mkdtemp()
            env = dict(os.environ, HOME=home, AWS_ACCESS_KEY_ID=os.environ["KEY"], AWS_SECRET_ACCESS_KEY=os.environ["SECRET"],
                       AWS_DEFAULT_REGION="us-east-1", AWS_CONFIG_FILE="/dev/null", AWS_SHARED_CREDENTIALS_FILE="/dev/null")
            cli = subprocess.run(["aws", "--endpoint-url", os.environ["ENDPOINT"], "s3", "presign", "s3://vtwo/a b+c.txt"],
                                 capture_output=True, env=env, timeout=120)
            url = cli.stdout.decode().strip()
            check(cli.returncode == 0 and "Signature=" in url, "aws s3 presign: %r" % (cli,))
            check(curl(url) == (200, b"presigned by v2"), "aws s3 presign's URL: %r" % (curl(url),))

            v2 = boto3.client("s3", endpoint_url=os.environ["ENDPOINT"], region_name="us-east-1",
                              aws_access_key_id=os.environ["KEY"], aws_secret_access_key=os.environ["SECRET"],
                              config=Config(signature_version="s3", s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
            v2.put_object(Bucket="vtwo", Key="dir/one", Body=b"one", Metadata={"who": "v2"})
            check(v2.head_object(Bucket="vtwo", Key="dir/one")["Metadata"] == {"who": "v2"}, "SigV2 PUT and HEAD")
            check(v2.get_object(Bucket="vtwo", Key="dir/one", Range="bytes=1-2")["Body"].read() == b"ne", "SigV2 ranged GET")
            v2.copy_object(Bucket="vtwo", Key="dir/two", CopySource="vtwo/dir/one")
            keys = [o["Key"] for o in v2.list_objects(Bucket="vtwo", Prefix="dir/")["Contents"]]
            check(keys == ["dir/one", "dir/two"], "SigV2 listing: %r" % keys)
            check(len(v2.list_objects_v2(Bucket="vtwo", MaxKeys=1)["Contents"]) == 1, "SigV2 ListObjectsV2")
            upload = v2.create_multipart_upload(Bucket="vtwo", Key="big")["UploadId"]
            etag = v2.upload_part(Bucket="vtwo", Key="big", UploadId=upload, PartNumber=1, Body=b"p" * 100)["ETag"]
            v2.complete_multipart_upload(Bucket="vtwo", Key="big", UploadId=upload,
                                         MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
            check(v2.get_object(Bucket="vtwo", Key="big")["Body"].read() == b"p" * 100, "SigV2 multipart")
            deleted = v2.delete_objects(Bucket="vtwo", Delete={"Objects": [{"Key": "dir/one"}, {"Key": "dir/two"}]})
            check(len(deleted["Deleted"]) == 2, "SigV2 DeleteObjects")
            v2.delete_object(Bucket="vtwo", Key="big")
            check(code(lambda: s3.head_object(Bucket="vtwo", Key="big")) == ("404", 404), "SigV2 DELETE")
            """, port: port, blobd: blobd)
        _ = dir
    }

    /// SigV2 has SigV4's checks: expiry, 15 minutes of skew, the signature over every
    /// `x-amz-*` header and the sub-resources, the key and its scopes.
    @Test func sigV2IsChecked() throws {
        let (blobd, port, _) = try S3AuthTests.start()
        try S3Tests.python(S3AuthTests.helpers + """
            s3.create_bucket(Bucket="vtwo")
            s3.put_object(Bucket="vtwo", Key="k", Body=b"checked")
            def v2client(key=None, secret=None):
                return boto3.client("s3", endpoint_url=os.environ["ENDPOINT"], region_name="us-east-1",
                                    aws_access_key_id=key or os.environ["KEY"], aws_secret_access_key=secret or os.environ["SECRET"],
                                    config=Config(signature_version="s3", s3={"addressing_style": "path"}, retries={"max_attempts": 1}))
            v2 = v2client()
            short = v2.generate_presigned_url("get_object", Params={"Bucket": "vtwo", "Key": "k"}, ExpiresIn=1)
            get = v2.generate_presigned_url("get_object", Params={"Bucket": "vtwo", "Key": "k"}, ExpiresIn=300)
            check(curl(get) == (200, b"checked"), "the URL as signed")
            check(error(curl(get.replace("/k?", "/up?"))) == (403, "SignatureDoesNotMatch"), "another key")
            check(error(curl(get + "&response-content-type=text/html")) == (403, "SignatureDoesNotMatch"), "an added sub-resource")
            check(error(curl(get, "-H", "x-amz-meta-x: 1")) == (403, "SignatureDoesNotMatch"), "an unsigned x-amz header")
            check(error(curl(get + "&Signature=x")) == (400, "InvalidArgument"), "Signature twice")
            put = v2.generate_presigned_url("put_object", Params={"Bucket": "vtwo", "Key": "up"}, ExpiresIn=300)
            # curl's default form Content-Type would not match the signature (SigV2 signs it): none is sent.
            for header in ["x-amz-copy-source: vtwo/k", "x-amz-meta-evil: 1", "Content-Type: text/html"]:
                answer = curl(put, "-X", "PUT", "--data-binary", "", "-H", "Content-Type:", "-H", header)
                check(error(answer) == (403, "SignatureDoesNotMatch"), "%s: %r" % (header, answer))
            check(code(lambda: s3.head_object(Bucket="vtwo", Key="up")) == ("404", 404), "nothing stored")
            check(curl(put, "-X", "PUT", "--data-binary", "as signed", "-H", "Content-Type:")[0] == 200, "the PUT as signed")
            check(s3.get_object(Bucket="vtwo", Key="up")["Body"].read() == b"as signed", "stored as signed")
            ro = v2client("READONLY", "ro-secret").generate_presigned_url("put_object", Params={"Bucket": "vtwo", "Key": "up"})
            check(error(curl(ro, "-X", "PUT", "--data-binary", "x", "-H", "Content-Type:")) == (403, "AccessDenied"), "a read-only key's PUT")
            check(code(lambda: v2client(secret="wrong").list_buckets()) == ("SignatureDoesNotMatch", 403), "wrong secret")
            check(code(lambda: v2client(key="NOPE").list_buckets()) == ("InvalidAccessKeyId", 403), "unknown key")
            far = v2.generate_presigned_url("get_object", Params={"Bucket": "vtwo", "Key": "k"}, ExpiresIn=8 * 86400)
            check(error(curl(far)) == (403, "AccessDenied"), "more than 7 days ahead")

            def signed(date, header="Date"):
                sts = "GET\\n\\n\\n%s\\n%s/vtwo/k" % ("" if header != "Date" else date,
                                                    "x-amz-date:%s\\n" % date if header != "Date" else "")
                sig = base64.b64encode(hmac.new(os.environ["SECRET"].encode(), sts.encode(), hashlib.sha1).digest()).decode()
                return curl(os.environ["ENDPOINT"] + "/vtwo/k", "-H", "%s: %s" % (header, date),
                            "-H", "Authorization: AWS %s:%s" % (os.environ["KEY"], sig))
            now = time.time()
            check(signed(email.utils.formatdate(now, usegmt=True)) == (200, b"checked"), "a hand-signed Date")
            check(signed(email.utils.formatdate(now, usegmt=True), "x-amz-date") == (200, b"checked"), "a hand-signed x-amz-date")
            check(error(signed(email.utils.formatdate(now - 1200, usegmt=True))) == (403, "RequestTimeTooSkewed"), "20 minutes late")
            check(error(signed(email.utils.formatdate(now + 1200, usegmt=True), "x-amz-date")) == (403, "RequestTimeTooSkewed"),
                  "20 minutes early")
            answer = curl(os.environ["ENDPOINT"] + "/vtwo/k", "-H", "Authorization: AWS %s:c2lnbmF0dXJl" % os.environ["KEY"])
            check(error(answer) == (403, "AccessDenied"), "no date: %r" % (answer,))
            time.sleep(2)
            check(error(curl(short)) == (403, "AccessDenied") and b"expired" in curl(short)[1], "an expired URL")
            """, port: port, blobd: blobd)
    }
}

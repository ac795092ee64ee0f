import Foundation
import LiveBlobd
import Testing

/// What a signature covers and what a key may do, against the real blobd: presigned URLs
/// with headers added, repeated parameters, malformed SignedHeaders, copies by a key that
/// cannot read, and SigV2 as boto3 and aws-cli make it (issue 20, items 2, 3, 8, 9 and 16).
@Suite struct S3AuthTests {
    /// blobd with the usual S3 keys of `S3Tests`, and a key that may only write.
    static func start() throws -> (BlobdProcess, Int, TempDir) {
        let dir = TempDir()
        let tokens = dir.file("tokens", Array(("s3 \(S3Tests.accessKey) \(S3Tests.secret) read,write,delete\n"
            + "s3 READONLY ro-secret read\ns3 WRITEONLY wo-secret write\n").utf8))
        chmod(tokens, 0o600)
        let blobd = try BlobdProcess(["--tokens-file", tokens, "--s3-listen", "127.0.0.1:0"])
        let port = try #require(blobd.s3Port, "the S3 listener announced its port")
        return (blobd, port, dir)
    }

    static let helpers = S3Tests.client + """
        import base64, hmac, time, email.utils, urllib.parse
        def curl(url, *args):
            out = subprocess.run(["curl", "-s", "-w", "%{http_code}"] + list(args) + [url], capture_output=True).stdout
            return int(out[-3:]), out[:-3]
        def error(answer):
            body = answer[1].decode()
            return answer[0], body.split("<Code>")[1].split("</Code>")[0] if "<Code>" in body else body

        """

    /// Item 2: an `x-amz-*` header added to a presigned URL is refused, as S3 does, before it
    /// can turn a PUT into a copy, a part into a range read, or add metadata or a checksum;
    /// also when the URL is served from the table of verified URLs.
    @Test func presignedURLsRefuseUnsignedAmzHeaders() throws {
        let (blobd, port, _) = try Self.start()
        try S3Tests.python(Self.helpers + """
            s3.create_bucket(Bucket="psign")
            s3.put_object(Bucket="psign", Key="secret", Body=b"top secret")
            put = s3.generate_presigned_url("put_object", Params={"Bucket": "psign", "Key": "mine"}, ExpiresIn=300)
            for header in ["x-amz-copy-source: psign/secret", "X-Amz-Meta-Evil: 1", "x-amz-checksum-crc32: AAAAAA==",
                           "x-amz-content-sha256: UNSIGNED-PAYLOAD"]:
                answer = curl(put, "-X", "PUT", "--data-binary", "", "-H", header)
                check(error(answer) == (403, "AccessDenied") and header.split(":")[0].lower().encode() in answer[1],
                      "a presigned PUT with %s: %r" % (header, answer))
            check(code(lambda: s3.head_object(Bucket="psign", Key="mine")) == ("404", 404), "nothing was stored or copied")
            upload = s3.create_multipart_upload(Bucket="psign", Key="mp")["UploadId"]
            part = s3.generate_presigned_url("upload_part", Params={"Bucket": "psign", "Key": "mp", "UploadId": upload, "PartNumber": 1},
                                             ExpiresIn=300)
            answer = curl(part, "-X", "PUT", "--data-binary", "", "-H", "x-amz-copy-source: psign/secret",
                          "-H", "x-amz-copy-source-range: bytes=0-0")
            check(error(answer) == (403, "AccessDenied"), "a presigned UploadPart made a copy: %r" % (answer,))
            check(s3.list_parts(Bucket="psign", Key="mp", UploadId=upload).get("Parts", []) == [], "no part was made")
            check(curl(put, "-X", "PUT", "--data-binary", "mine")[0] == 200, "the PUT as signed")
            check(s3.get_object(Bucket="psign", Key="mine")["Body"].read() == b"mine", "stored as signed")
            get = s3.generate_presigned_url("get_object", Params={"Bucket": "psign", "Key": "secret"}, ExpiresIn=300)
            for _ in range(2):
                check(curl(get) == (200, b"top secret"), "the presigned GET, verified then remembered")
            for header in ["x-amz-meta-x: 1", "X-Amz-Copy-Source: psign/mine"]:
                answer = curl(get, "-H", header)
                check(error(answer) == (403, "AccessDenied"), "a remembered GET with %s: %r" % (header, answer))
            check(curl(get) == (200, b"top secret"), "the GET as signed, once more")
            """, port: port, blobd: blobd)
    }

    /// Item 8: each presigned-URL parameter once. A second X-Amz-Signature (30 KB of padding)
    /// was ignored by the signature and made the URL a new key of the verified URLs.
    @Test func repeatedPresignParametersAreRefused() throws {
        let (blobd, port, _) = try Self.start()
        try S3Tests.python(Self.helpers + """
            s3.create_bucket(Bucket="twice")
            s3.put_object(Bucket="twice", Key="k", Body=b"once")
            get = s3.generate_presigned_url("get_object", Params={"Bucket": "twice", "Key": "k"}, ExpiresIn=300)
            check(curl(get) == (200, b"once"), "the URL as signed")
            for extra in ["&X-Amz-Signature=" + "0" * 30000, "&X-Amz-Signature=1", "&X-Amz-Credential=x", "&X-Amz-Expires=60",
                          "&X-Amz-Date=20260101T000000Z", "&X-Amz-SignedHeaders=host", "&X-Amz-Algorithm=AWS4-HMAC-SHA256"]:
                answer = curl(get + extra)
                check(error(answer) == (400, "AuthorizationQueryParametersError"), "%s...: %r" % (extra[:30], answer[0]))
            check(curl(get) == (200, b"once"), "the URL as signed, still")
            """, port: port, blobd: blobd)
    }

    /// Item 9: SignedHeaders repeated, unsorted or naming a header the request lacks is refused
    /// before any canonical request is built (with only a known access key id, no secret).
    @Test func malformedSignedHeadersAreRefusedEarly() throws {
        let (blobd, port, _) = try Self.start()
        try S3Tests.python(Self.helpers + """
            now = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
            def send(signed_headers, *extra):
                auth = "AWS4-HMAC-SHA256 Credential=%s/%s/us-east-1/s3/aws4_request,SignedHeaders=%s,Signature=%s" % (
                    os.environ["KEY"], now[:8], signed_headers, "0" * 64)
                args = ["-H", "Authorization: " + auth, "-H", "x-amz-date: " + now, "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD"]
                for header in extra: args += ["-H", header]
                return curl(os.environ["ENDPOINT"] + "/", *args)
            started = time.monotonic()
            answer = send("host;" + ";".join(["a"] * 6000) + ";x-amz-content-sha256;x-amz-date", *["a: %d" % i for i in range(250)])
            check(error(answer) == (400, "AuthorizationHeaderMalformed"), "6,000 repeated names: %r" % (answer,))
            check(error(send("a;a;host;x-amz-content-sha256;x-amz-date", "a: 1")) == (400, "AuthorizationHeaderMalformed"), "a name twice")
            check(error(send("x-amz-date;host;x-amz-content-sha256")) == (400, "AuthorizationHeaderMalformed"), "unsorted")
            answer = send("host;x-amz-content-sha256;x-amz-date;x-custom")
            check(error(answer) == (403, "AccessDenied") and b"x-custom" in answer[1], "an absent signed header: %r" % (answer,))
            check(error(send("host;x-amz-content-sha256;x-amz-date")) == (403, "SignatureDoesNotMatch"), "well formed, wrong signature")
            """, port: port, blobd: blobd)
    }

    /// Item 3: CopyObject and UploadPartCopy read their source: a key without read gets
    /// AccessDenied (it could copy any object, or read it byte by byte through part ETags).
    @Test func copiesNeedReadOnTheSource() throws {
        let (blobd, port, _) = try Self.start()
        try S3Tests.python(Self.helpers + """
            s3.create_bucket(Bucket="copies")
            s3.put_object(Bucket="copies", Key="secret", Body=b"top secret")
            writer = client(key="WRITEONLY", secret="wo-secret")
            check(code(lambda: writer.get_object(Bucket="copies", Key="secret")) == ("AccessDenied", 403), "the writer cannot read")
            check(code(lambda: writer.copy_object(Bucket="copies", Key="stolen", CopySource="copies/secret")) == ("AccessDenied", 403),
                  "CopyObject without read")
            check(code(lambda: s3.head_object(Bucket="copies", Key="stolen")) == ("404", 404), "nothing copied")
            upload = writer.create_multipart_upload(Bucket="copies", Key="mp")["UploadId"]
            check(code(lambda: writer.upload_part_copy(Bucket="copies", Key="mp", UploadId=upload, PartNumber=1,
                                                       CopySource="copies/secret", CopySourceRange="bytes=0-0")) == ("AccessDenied", 403),
                  "UploadPartCopy without read")
            writer.put_object(Bucket="copies", Key="own", Body=b"written")
            reader = client(key="READONLY", secret="ro-secret")
            check(code(lambda: reader.copy_object(Bucket="copies", Key="x", CopySource="copies/secret")) == ("AccessDenied", 403),
                  "CopyObject without write")
            s3.copy_object(Bucket="copies", Key="copy", CopySource="copies/secret")
            check(s3.get_object(Bucket="copies", Key="copy")["Body"].read() == b"top secret", "a key with both copies")
            part = s3.upload_part_copy(Bucket="copies", Key="mp", UploadId=upload, PartNumber=1, CopySource="copies/secret",
                                       CopySourceRange="bytes=0-2")
            check(part["CopyPartResult"]["ETag"] == '"%s"' % hashlib.md5(b"top").hexdigest(), "a part copied by a key with both")
            """, port: port, blobd: blobd)
    }
}

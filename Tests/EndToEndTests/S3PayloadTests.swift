import Foundation
import LiveBlobd
import Testing

/// Signatures, presigned URLs, aws-chunked payloads and checksums, as real clients send them.
@Suite struct S3PayloadTests {
    /// A presigned URL requested again is served from the table of verified URLs, and still
    /// answers 403 once it has expired, when it comes with another Host or payload hash, when
    /// its key lacks the scope, and once SIGHUP has given its key a new secret.
    @Test func repeatedPresignedURLsAreStillChecked() throws {
        let (blobd, port, dir) = try S3Tests.start()
        try S3Tests.python(S3Tests.client + """
            import signal, time
            def curl(url, *args):
                out = subprocess.run(["curl", "-s", "-w", "%{http_code}"] + list(args) + [url], capture_output=True).stdout
                return out[-3:], out[:-3]
            s3.create_bucket(Bucket="rep")
            s3.put_object(Bucket="rep", Key="k", Body=b"repeated")
            short = s3.generate_presigned_url("get_object", Params={"Bucket": "rep", "Key": "k"}, ExpiresIn=2)
            long = s3.generate_presigned_url("get_object", Params={"Bucket": "rep", "Key": "k"}, ExpiresIn=300)
            for url in (short, long, short, long):
                check(curl(url) == (b"200", b"repeated"), "a presigned GET, again")
            other_host = "localhost:%s" % os.environ["ENDPOINT"].rsplit(":", 1)[1]
            status, body = curl(long, "-H", "Host: " + other_host)
            check(status == b"403" and b"SignatureDoesNotMatch" in body, "another Host: %r" % ((status, body),))
            # A payload hash is an x-amz-* header the URL did not sign (issue 20, item 2).
            status, body = curl(long, "-H", "x-amz-content-sha256: " + hashlib.sha256(b"").hexdigest())
            check(status == b"403" and b"AccessDenied" in body, "another payload hash: %r" % ((status, body),))
            check(curl(long)[0] == b"200", "the URL as signed, once more")
            ro = client(key="READONLY", secret="ro-secret")
            put = ro.generate_presigned_url("put_object", Params={"Bucket": "rep", "Key": "k"}, ExpiresIn=300)
            for attempt in range(2):
                status, body = curl(put, "-X", "PUT", "--data-binary", "x")
                check(status == b"403" and b"AccessDenied" in body, "a read-only key's presigned PUT: %r" % ((status, body),))
            time.sleep(3.5)
            status, body = curl(short)
            check(status == b"403" and b"expired" in body, "an expired URL: %r" % ((status, body),))
            # A new secret for the same key: the URL signed with the old one stops working.
            tokens, pid = sys.argv[1], int(sys.argv[2])
            with open(tokens) as f: text = f.read()
            with open(tokens, "w") as f: f.write(text.replace(os.environ["SECRET"], "a-new-secret"))
            os.kill(pid, signal.SIGHUP)
            fresh = client(secret="a-new-secret")
            for _ in range(100):
                if code(lambda: fresh.head_object(Bucket="rep", Key="k")) is None: break
                time.sleep(0.1)
            check(code(lambda: fresh.head_object(Bucket="rep", Key="k")) is None, "the new secret works after SIGHUP")
            status, body = curl(long)
            check(status == b"403" and b"SignatureDoesNotMatch" in body, "the old secret's URL after SIGHUP: %r" % ((status, body),))
            """, port: port, blobd: blobd, arguments: [dir.path + "/tokens", String(blobd.pid)])
    }

    /// Presigned URLs used by curl, wrong keys and scopes, and hand-signed requests whose
    /// signature, date or expiry is off.
    @Test func signaturesAreChecked() throws {
        let (blobd, port, _) = try S3Tests.start()
        try S3Tests.python(S3Tests.client + """
            import datetime, hmac, urllib.request, urllib.parse
            s3.create_bucket(Bucket="sig")
            s3.put_object(Bucket="sig", Key="a b", Body=b"signed bytes")
            get = s3.generate_presigned_url("get_object", Params={"Bucket": "sig", "Key": "a b"}, ExpiresIn=300)
            out = subprocess.run(["curl", "-s", "-w", "%{http_code}", get], capture_output=True).stdout
            check(out == b"signed bytes200", "presigned GET by curl: %r" % out)
            put = s3.generate_presigned_url("put_object", Params={"Bucket": "sig", "Key": "uploaded"}, ExpiresIn=300)
            out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT", "--data-binary", "by curl", put],
                                 capture_output=True).stdout
            check(out == b"200", "presigned PUT by curl: %r" % out)
            check(s3.get_object(Bucket="sig", Key="uploaded")["Body"].read() == b"by curl", "presigned PUT stored")
            tampered = get.replace("a%20b", "uploaded")
            out = subprocess.run(["curl", "-s", "-w", "%{http_code}", tampered], capture_output=True).stdout
            check(out.endswith(b"403") and b"SignatureDoesNotMatch" in out, "a presigned URL names one object")

            check(code(lambda: client(secret="wrong").list_buckets()) == ("SignatureDoesNotMatch", 403), "wrong secret")
            check(code(lambda: client(key="NOPE").list_buckets()) == ("InvalidAccessKeyId", 403), "unknown key")
            ro = client(key="READONLY", secret="ro-secret")
            check(ro.get_object(Bucket="sig", Key="a b")["Body"].read() == b"signed bytes", "read scope reads")
            check(code(lambda: ro.put_object(Bucket="sig", Key="x", Body=b"x")) == ("AccessDenied", 403), "read scope cannot write")
            out = subprocess.run(["curl", "-s", "-w", "%{http_code}", os.environ["ENDPOINT"] + "/sig/a%20b"], capture_output=True).stdout
            check(out.endswith(b"403") and b"AccessDenied" in out, "anonymous access refused")

            # Hand-signed (SigV4 by the book) with a chosen clock.
            def sign(method, path, when, expires=None, payload="UNSIGNED-PAYLOAD", headers_only=True):
                host = urllib.parse.urlparse(os.environ["ENDPOINT"]).netloc
                date, stamp = when.strftime("%Y%m%d"), when.strftime("%Y%m%dT%H%M%SZ")
                scope = date + "/us-east-1/s3/aws4_request"
                def h(key, msg): return hmac.new(key, msg.encode(), hashlib.sha256).digest()
                key = h(h(h(h(("AWS4" + os.environ["SECRET"]).encode(), date), "us-east-1"), "s3"), "aws4_request")
                if expires is None:
                    canonical = "\\n".join([method, path, "", "host:%s\\nx-amz-content-sha256:%s\\nx-amz-date:%s\\n" % (host, payload, stamp),
                                           "host;x-amz-content-sha256;x-amz-date", payload])
                    sts = "\\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
                    signature = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
                    return urllib.request.Request(os.environ["ENDPOINT"] + path, method=method, headers={
                        "x-amz-date": stamp, "x-amz-content-sha256": payload,
                        "Authorization": "AWS4-HMAC-SHA256 Credential=%s/%s,SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature=%s"
                                         % (os.environ["KEY"], scope, signature)})
                query = urllib.parse.urlencode([("X-Amz-Algorithm", "AWS4-HMAC-SHA256"), ("X-Amz-Credential", os.environ["KEY"] + "/" + scope),
                                                ("X-Amz-Date", stamp), ("X-Amz-Expires", str(expires)), ("X-Amz-SignedHeaders", "host")],
                                               quote_via=urllib.parse.quote)
                canonical = "\\n".join([method, path, query, "host:%s\\n" % host, "host", "UNSIGNED-PAYLOAD"])
                sts = "\\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
                signature = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
                return urllib.request.Request(os.environ["ENDPOINT"] + path + "?" + query + "&X-Amz-Signature=" + signature, method=method)
            def status(request):
                try:
                    with urllib.request.urlopen(request) as r:
                        return r.status, r.read()
                except urllib.error.HTTPError as e:
                    return e.code, e.read()
            now = datetime.datetime.now(datetime.timezone.utc)
            check(status(sign("GET", "/sig/a%20b", now)) == (200, b"signed bytes"), "hand-signed GET")
            late = status(sign("GET", "/sig/a%20b", now - datetime.timedelta(minutes=20)))
            check(late[0] == 403 and b"RequestTimeTooSkewed" in late[1], "20 minutes of skew: %r" % (late,))
            check(status(sign("GET", "/sig/a%20b", now - datetime.timedelta(minutes=10), expires=3600))[0] == 200, "presigned, valid")
            expired = status(sign("GET", "/sig/a%20b", now - datetime.timedelta(hours=2), expires=3600))
            check(expired[0] == 403 and b"AccessDenied" in expired[1], "presigned, expired: %r" % (expired,))
            week = status(sign("GET", "/sig/a%20b", now, expires=604801))
            check(week[0] == 400 and b"AuthorizationQueryParametersError" in week[1], "expiry over 7 days: %r" % (week,))
            # A body that does not match its signed SHA-256 is refused and not stored.
            wrong = sign("PUT", "/sig/checked", now, payload=hashlib.sha256(b"other bytes").hexdigest())
            wrong.data = b"these bytes"
            result = status(wrong)
            check(result[0] == 400 and b"XAmzContentSHA256Mismatch" in result[1], "payload hash mismatch: %r" % (result,))
            check(code(lambda: s3.head_object(Bucket="sig", Key="checked")) == ("404", 404), "nothing stored")
            """, port: port, blobd: blobd)
    }

    /// aws-chunked bodies, built by the book: signed chunks (what minio-go, and so restic,
    /// sends), and unsigned chunks with a checksum trailer (what boto3 and aws-cli send over
    /// https). The framing is never stored; a bad chunk signature or checksum stores nothing.
    @Test func awsChunkedPayloads() throws {
        let (blobd, port, _) = try S3Tests.start()
        try S3Tests.python(S3Tests.client + """
            import datetime, hmac, http.client, base64, zlib, urllib.parse
            s3.create_bucket(Bucket="chunks")
            host = urllib.parse.urlparse(os.environ["ENDPOINT"]).netloc
            def h(key, msg): return hmac.new(key, msg.encode(), hashlib.sha256).digest()
            def put(key, chunks, mode, trailer=None, tamper=False, extra_headers={}, trailer_signature=None):
                now = datetime.datetime.now(datetime.timezone.utc)
                date, stamp = now.strftime("%Y%m%d"), now.strftime("%Y%m%dT%H%M%SZ")
                scope = date + "/us-east-1/s3/aws4_request"
                signing = h(h(h(h(("AWS4" + os.environ["SECRET"]).encode(), date), "us-east-1"), "s3"), "aws4_request")
                decoded = sum(len(c) for c in chunks)
                headers = {"host": host, "x-amz-content-sha256": mode, "x-amz-date": stamp,
                           "x-amz-decoded-content-length": str(decoded), "content-encoding": "aws-chunked"}
                if trailer: headers["x-amz-trailer"] = trailer[0]
                headers.update(extra_headers)
                names = sorted(headers)
                canonical = "\\n".join(["PUT", "/chunks/" + key, "", "".join("%s:%s\\n" % (n, headers[n]) for n in names), ";".join(names), mode])
                sts = "\\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
                previous = hmac.new(signing, sts.encode(), hashlib.sha256).hexdigest()
                headers["Authorization"] = "AWS4-HMAC-SHA256 Credential=%s/%s,SignedHeaders=%s,Signature=%s" % (os.environ["KEY"], scope, ";".join(names), previous)
                body = b""
                for data in list(chunks) + [b""]:
                    if mode.startswith("STREAMING-AWS4-HMAC-SHA256-PAYLOAD"):
                        sts = "\\n".join(["AWS4-HMAC-SHA256-PAYLOAD", stamp, scope, previous, hashlib.sha256(b"").hexdigest(), hashlib.sha256(data).hexdigest()])
                        previous = hmac.new(signing, sts.encode(), hashlib.sha256).hexdigest()
                        body += b"%x;chunk-signature=%s\\r\\n" % (len(data), previous.encode())
                    else:
                        body += b"%x\\r\\n" % len(data)
                    # Tampering flips a bit of the last byte (a fixed byte would leave 1 in 256 random chunks unchanged).
                    if data: body += (data[:-1] + bytes([data[-1] ^ 1]) if tamper and data is chunks[-1] else data) + b"\\r\\n"
                if trailer: body += ("%s:%s\\r\\n" % trailer).encode()
                if trailer and mode.endswith("-TRAILER") and mode.startswith("STREAMING-AWS4"):
                    canonical_trailer = "%s:%s\\n" % trailer
                    sts = "\\n".join(["AWS4-HMAC-SHA256-TRAILER", stamp, scope, previous, hashlib.sha256(canonical_trailer.encode()).hexdigest()])
                    signature = trailer_signature or hmac.new(signing, sts.encode(), hashlib.sha256).hexdigest()
                    body += b"x-amz-trailer-signature:%s\\r\\n" % signature.encode()
                body += b"\\r\\n"
                del headers["host"]
                connection = http.client.HTTPConnection(host)
                connection.request("PUT", "/chunks/" + key, body=body, headers=headers)
                response = connection.getresponse()
                return response.status, response.read()
            chunks = [os.urandom(65536), os.urandom(65536), os.urandom(1000)]
            whole = b"".join(chunks)
            status, text = put("signed", chunks, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD")
            check(status == 200, "signed chunks: %r" % text)
            check(s3.get_object(Bucket="chunks", Key="signed")["Body"].read() == whole, "signed chunks stored without framing")
            status, text = put("tampered", chunks, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", tamper=True)
            check(status == 403 and b"SignatureDoesNotMatch" in text, "an altered chunk: %r" % text)
            check(code(lambda: s3.head_object(Bucket="chunks", Key="tampered")) == ("404", 404), "nothing stored")

            crc32 = base64.b64encode(zlib.crc32(whole).to_bytes(4, "big")).decode()
            status, text = put("crc32", chunks, "STREAMING-UNSIGNED-PAYLOAD-TRAILER", trailer=("x-amz-checksum-crc32", crc32))
            check(status == 200, "crc32 trailer: %r" % text)
            check(s3.get_object(Bucket="chunks", Key="crc32")["Body"].read() == whole, "trailer upload stored")
            sha = base64.b64encode(hashlib.sha256(whole).digest()).decode()
            check(put("sha256", chunks, "STREAMING-UNSIGNED-PAYLOAD-TRAILER", trailer=("x-amz-checksum-sha256", sha))[0] == 200, "sha256 trailer")
            status, text = put("crc32c", [b"123456789"], "STREAMING-UNSIGNED-PAYLOAD-TRAILER", trailer=("x-amz-checksum-crc32c", "4waSgw=="))
            check(status == 200, "crc32c of the check string: %r" % text)
            status, text = put("bad-crc", chunks, "STREAMING-UNSIGNED-PAYLOAD-TRAILER", trailer=("x-amz-checksum-crc32", "AAAAAA=="))
            check(status == 400 and b"BadDigest" in text, "a wrong trailer checksum: %r" % text)
            check(code(lambda: s3.head_object(Bucket="chunks", Key="bad-crc")) == ("404", 404), "nothing stored")

            # Signed chunks with a signed trailer (what the AWS SDKs for Java, Go v2 and .NET send over http).
            mode = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
            status, text = put("signed-trailer", chunks, mode, trailer=("x-amz-checksum-crc32", crc32))
            check(status == 200, "signed chunks and trailer: %r" % text)
            check(s3.get_object(Bucket="chunks", Key="signed-trailer")["Body"].read() == whole, "signed trailer upload stored")
            status, text = put("bad-trailer-sig", chunks, mode, trailer=("x-amz-checksum-crc32", crc32), trailer_signature="0" * 64)
            check(status == 403 and b"SignatureDoesNotMatch" in text, "an altered trailer signature: %r" % text)
            status, text = put("bad-trailer-crc", chunks, mode, trailer=("x-amz-checksum-crc32", "AAAAAA=="))
            check(status == 400 and b"BadDigest" in text, "a signed but wrong trailer checksum: %r" % text)
            status, text = put("tampered-trailer", chunks, mode, trailer=("x-amz-checksum-crc32", crc32), tamper=True)
            check(status == 403 and b"SignatureDoesNotMatch" in text, "an altered chunk before a trailer: %r" % text)
            for key in ("bad-trailer-sig", "bad-trailer-crc", "tampered-trailer"):
                check(code(lambda: s3.head_object(Bucket="chunks", Key=key)) == ("404", 404), "nothing stored for " + key)

            # CRC-64/NVME: its check value over "123456789" is 0xAE8B14860A799888.
            crc64 = base64.b64encode(bytes.fromhex("ae8b14860a799888")).decode()
            status, text = put("crc64", [b"123456789"], "STREAMING-UNSIGNED-PAYLOAD-TRAILER", trailer=("x-amz-checksum-crc64nvme", crc64))
            check(status == 200, "crc64nvme of the check string: %r" % text)
            head = s3.head_object(Bucket="chunks", Key="crc64", ChecksumMode="ENABLED")
            check(head.get("ChecksumCRC64NVME") == crc64, "the stored checksum is returned: %r" % head)
            """, port: port, blobd: blobd)
    }

    /// x-amz-checksum-* as boto3 sends them (CRC-32 by default, others on request), verified
    /// before the commit and returned on GET and HEAD with x-amz-checksum-mode: ENABLED; every
    /// blob, whichever dialect stored it, answers with its SHA-256 too.
    @Test func checksumsAreVerifiedStoredAndReturned() throws {
        let (blobd, port, _) = try S3Tests.start()
        try S3Tests.python(S3Tests.client + """
            import base64, zlib, urllib.request
            s3.create_bucket(Bucket="sums")
            body = os.urandom(200000)
            b64 = lambda digest: base64.b64encode(digest).decode()
            crc32 = b64(zlib.crc32(body).to_bytes(4, "big"))
            sha256 = b64(hashlib.sha256(body).digest())
            put = s3.put_object(Bucket="sums", Key="default", Body=body)
            check(put.get("ChecksumCRC32") == crc32, "boto3's default CRC-32 is verified and answered: %r" % put)
            got = s3.get_object(Bucket="sums", Key="default", ChecksumMode="ENABLED")
            check(got["Body"].read() == body, "bytes")
            check(got.get("ChecksumCRC32") == crc32 and "ChecksumSHA256" not in got and got.get("ChecksumType") == "FULL_OBJECT",
                  "GET returns the object's one checksum: %r" % got)
            # boto3 asks by default (response_checksum_validation "when_supported"); this client does not.
            plain = boto3.client("s3", endpoint_url=os.environ["ENDPOINT"], region_name="us-east-1", aws_access_key_id=os.environ["KEY"],
                                 aws_secret_access_key=os.environ["SECRET"], config=Config(response_checksum_validation="when_required"))
            check("ChecksumCRC32" not in plain.get_object(Bucket="sums", Key="default"), "only when asked")
            ranged = s3.get_object(Bucket="sums", Key="default", Range="bytes=0-99", ChecksumMode="ENABLED")
            check(ranged["Body"].read() == body[:100] and "ChecksumCRC32" not in ranged, "a range comes without the whole object's checksum")

            for algorithm, digest in [("SHA1", hashlib.sha1(body).digest()), ("SHA256", hashlib.sha256(body).digest())]:
                s3.put_object(Bucket="sums", Key=algorithm, Body=body, ChecksumAlgorithm=algorithm)
                head = s3.head_object(Bucket="sums", Key=algorithm, ChecksumMode="ENABLED")
                check(head.get("Checksum" + algorithm) == b64(digest), "%s stored: %r" % (algorithm, head))
            # CRC-32C and CRC-64/NVME are computed by boto3 through awscrt, and by blobd's own code.
            for algorithm, check_value in [("CRC32C", "4waSgw=="), ("CRC64NVME", b64(bytes.fromhex("ae8b14860a799888")))]:
                put = s3.put_object(Bucket="sums", Key=algorithm, Body=b"123456789", ChecksumAlgorithm=algorithm)
                check(put.get("Checksum" + algorithm) == check_value, "%s of the check string: %r" % (algorithm, put))
                put = s3.put_object(Bucket="sums", Key=algorithm, Body=body, ChecksumAlgorithm=algorithm)
                head = s3.head_object(Bucket="sums", Key=algorithm, ChecksumMode="ENABLED")
                check(head.get("Checksum" + algorithm) == put.get("Checksum" + algorithm) is not None, "%s stored: %r" % (algorithm, head))
                check(s3.get_object(Bucket="sums", Key=algorithm)["Body"].read() == body, "bytes")

            check(code(lambda: s3.put_object(Bucket="sums", Key="wrong", Body=body, ChecksumCRC32="AAAAAA=="))
                  == ("BadDigest", 400), "a wrong CRC-32 header")
            check(code(lambda: s3.put_object(Bucket="sums", Key="wrong", Body=body, ChecksumSHA256=b64(hashlib.sha256(b"x").digest())))
                  == ("BadDigest", 400), "a wrong SHA-256 header")
            check(code(lambda: s3.head_object(Bucket="sums", Key="wrong")) == ("404", 404), "nothing stored")

            # A blob stored through /v1 answers with its SHA-256, which boto3 then verifies.
            request = urllib.request.Request(os.environ["V1"] + "/v1/blobs/sums/native", data=body, method="PUT",
                                             headers={"Authorization": "Bearer bearer-token"})
            urllib.request.urlopen(request).read()
            got = s3.get_object(Bucket="sums", Key="native", ChecksumMode="ENABLED")
            check(got["Body"].read() == body and got.get("ChecksumSHA256") == sha256, "a /v1 blob's SHA-256: %r" % got)
            """, port: port, blobd: blobd)
    }
}

import Foundation
import LiveBlobd
import Testing

/// The S3 dialect's answers as AWS gives them: error codes, details, multipart checksums, anonymous overrides.
@Suite struct S3AnswerTests {
    /// Error codes where s3-tests (or AWS's documentation) and a plain HTTP reading part ways:
    /// metadata size, signatures other than SigV4, conditional writes on a missing key,
    /// malformed checksums, and the checksum elements of the multipart listings.
    @Test func errorCodesAsAWSAnswersThem() throws {
        let (blobd, port, _) = try S3Tests.start()
        try S3Tests.python(S3Tests.client + """
            import base64, zlib, urllib.request, urllib.error
            s3.create_bucket(Bucket="codes")
            # User metadata: 2 KB in all (names and values), one value may take most of it.
            s3.put_object(Bucket="codes", Key="meta", Body=b"x", Metadata={"big": "v" * 1500})
            check(s3.head_object(Bucket="codes", Key="meta")["Metadata"] == {"big": "v" * 1500}, "a 1500-byte value")
            check(code(lambda: s3.put_object(Bucket="codes", Key="meta2", Body=b"x", Metadata={"a": "v" * 1100, "b": "v" * 1100}))
                  == ("MetadataTooLarge", 400), "over 2 KB of metadata")
            # A LocationConstraint is recorded and answered; a malformed one is refused.
            s3.create_bucket(Bucket="codes-eu", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
            check(s3.get_bucket_location(Bucket="codes-eu")["LocationConstraint"] == "eu-west-1", "GetBucketLocation")
            check(s3.head_bucket(Bucket="codes-eu")["ResponseMetadata"]["HTTPHeaders"]["x-amz-bucket-region"] == "eu-west-1", "HeadBucket")
            check({b["Name"]: b["BucketRegion"] for b in s3.list_buckets()["Buckets"]} == {"codes": "us-east-1", "codes-eu": "eu-west-1"},
                  "ListBuckets")
            check(code(lambda: s3.create_bucket(Bucket="codes-bad", CreateBucketConfiguration={"LocationConstraint": "eu west"}))
                  == ("InvalidLocationConstraint", 400), "a malformed region")
            # Content-Language is stored like the other standard headers, kept by a copy, and /v1 answers it too.
            s3.put_object(Bucket="codes", Key="lang", Body=b"hallo", ContentLanguage="de-DE")
            check(s3.head_object(Bucket="codes", Key="lang")["ContentLanguage"] == "de-DE", "Content-Language")
            s3.copy_object(Bucket="codes", Key="lang-copy", CopySource="codes/lang")
            check(s3.get_object(Bucket="codes", Key="lang-copy")["ContentLanguage"] == "de-DE", "kept by CopyObject")
            # A copy keeps the source's checksum, or gets the one x-amz-checksum-algorithm asks for.
            s3.put_object(Bucket="codes", Key="summed", Body=b"hallo", ChecksumAlgorithm="CRC32")
            kept = s3.copy_object(Bucket="codes", Key="summed-copy", CopySource="codes/summed")["CopyObjectResult"]
            check(kept.get("ChecksumCRC32") == base64.b64encode(zlib.crc32(b"hallo").to_bytes(4, "big")).decode(), "kept: %r" % kept)
            sha = base64.b64encode(hashlib.sha256(b"hallo").digest()).decode()
            asked = s3.copy_object(Bucket="codes", Key="summed-sha", CopySource="codes/summed", ChecksumAlgorithm="SHA256")
            check(asked["CopyObjectResult"].get("ChecksumSHA256") == sha, "asked for: %r" % asked)
            head = s3.head_object(Bucket="codes", Key="summed-sha", ChecksumMode="ENABLED")
            check(head.get("ChecksumSHA256") == sha and "ChecksumCRC32" not in head, "the copy's one checksum: %r" % head)
            native = urllib.request.urlopen(urllib.request.Request(os.environ["V1"] + "/v1/blobs/codes/lang-copy",
                                                                   headers={"Authorization": "Bearer bearer-token"}))
            check(native.headers["Content-Language"] == "de-DE", "through /v1")

            def raw(url, method="GET", headers={}):
                try:
                    with urllib.request.urlopen(urllib.request.Request(url, method=method, headers=headers)) as r:
                        return r.status, r.read()
                except urllib.error.HTTPError as e:
                    return e.code, e.read()
            def error_code(answer):
                body = answer[1].decode()
                return answer[0], body.split("<Code>")[1].split("</Code>")[0] if "<Code>" in body else body
            # SigV2 (see S3SigV2Tests): a header without a date, as S3 answers it.
            plain = os.environ["ENDPOINT"] + "/codes/meta"
            check(error_code(raw(plain, headers={"Authorization": "AWS %s:c2lnbmF0dXJl" % os.environ["KEY"]})) == (403, "AccessDenied"),
                  "a SigV2 header without a date")
            check(error_code(raw(plain, headers={"Authorization": "AWS HAHAHA"})) == (400, "InvalidArgument"), "a malformed SigV2 header")
            check(error_code(raw(plain, headers={"Authorization": "Bearer bearer-token"})) == (400, "InvalidArgument"), "another scheme")
            check(error_code(raw(plain, headers={"Authorization": ""})) == (403, "AccessDenied"), "an empty Authorization")
            signed = s3.generate_presigned_url("get_object", Params={"Bucket": "codes", "Key": "meta"})
            check(raw(signed)[0] == 200, "the presigned URL alone")
            check(error_code(raw(signed, headers={"Authorization": "AWS4-HMAC-SHA256 Credential=%s/20260101/us-east-1/s3/aws4_request, "
                                                  "SignedHeaders=host, Signature=00" % os.environ["KEY"]})) == (400, "InvalidArgument"),
                  "a presigned URL with an Authorization header")

            # If-Match naming an ETag on a missing key: NoSuchKey (AWS); If-Match: * stays 412.
            check(code(lambda: s3.put_object(Bucket="codes", Key="absent", Body=b"x", IfMatch='"0123"')) == ("NoSuchKey", 404), "put if-match")
            check(code(lambda: s3.put_object(Bucket="codes", Key="absent", Body=b"x", IfMatch="*")) == ("PreconditionFailed", 412), "put if-match *")
            upload = s3.create_multipart_upload(Bucket="codes", Key="absent")["UploadId"]
            part = s3.upload_part(Bucket="codes", Key="absent", UploadId=upload, PartNumber=1, Body=b"p")
            check(code(lambda: s3.complete_multipart_upload(Bucket="codes", Key="absent", UploadId=upload, IfMatch='"0123"',
                                                            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]}))
                  == ("NoSuchKey", 404), "complete if-match")
            check(code(lambda: s3.head_object(Bucket="codes", Key="absent")) == ("404", 404), "nothing stored")

            # A checksum that is not the base64 of a digest of its length is refused before the body counts.
            check(code(lambda: s3.put_object(Bucket="codes", Key="c", Body=b"x", ChecksumCRC32="notbase64!!")) == ("InvalidRequest", 400), "garbage")
            check(code(lambda: s3.put_object(Bucket="codes", Key="c", Body=b"x", ChecksumSHA256="AAAAAA==")) == ("InvalidRequest", 400), "length")
            # The SDK's algorithm header without the checksum it announces.
            lone = client()
            def drop(request, **kwargs):
                check("x-amz-checksum-crc32" in request.headers and "x-amz-sdk-checksum-algorithm" in request.headers, "boto3's headers")
                del request.headers["x-amz-checksum-crc32"]
            lone.meta.events.register("before-sign.s3.PutObject", drop)
            check(code(lambda: lone.put_object(Bucket="codes", Key="c", Body=b"x", ChecksumAlgorithm="CRC32")) == ("InvalidRequest", 400),
                  "x-amz-sdk-checksum-algorithm alone")

            # The multipart listings name an upload's checksum algorithm and type.
            summed = s3.create_multipart_upload(Bucket="codes", Key="summed", ChecksumAlgorithm="SHA256")["UploadId"]
            s3.upload_part(Bucket="codes", Key="summed", UploadId=summed, PartNumber=1, Body=b"p", ChecksumAlgorithm="SHA256")
            listed = s3.list_parts(Bucket="codes", Key="summed", UploadId=summed)
            check((listed.get("ChecksumAlgorithm"), listed.get("ChecksumType")) == ("SHA256", "COMPOSITE"), "ListParts: %r" % listed)
            uploads = {u["Key"]: u for u in s3.list_multipart_uploads(Bucket="codes")["Uploads"]}
            check(uploads["summed"].get("ChecksumAlgorithm") == "SHA256" and "ChecksumAlgorithm" not in uploads["absent"],
                  "ListMultipartUploads: %r" % uploads)

            # An error about a key S3 could not store still parses: XML 1.0 cannot carry U+0001.
            check(code(lambda: s3.put_object(Bucket="codes", Key="bad\\x01key", Body=b"x")) == ("InvalidArgument", 400), "a control character")
            """, port: port, blobd: blobd)
    }

    /// Details s3-tests checks, as AWS answers them: bucket naming, empty metadata values,
    /// `response-*` overrides, unquoted ETags, canned ACLs, version ids, a Complete without
    /// parts, the ACL of a missing key and a PUT without Content-Length.
    @Test func s3DetailsAsAWSAnswersThem() throws {
        let (blobd, port, _) = try S3Tests.start()
        try S3Tests.python(S3Tests.client + """
            import datetime
            for name in ["foo.-bar", "foo-.bar", "192.168.5.123", "xn--foo", "sthree-foo", "foo-s3alias", "foo--ol-s3"]:
                check(code(lambda: s3.create_bucket(Bucket=name)) == ("InvalidBucketName", 400), "bucket name " + name)
            s3.create_bucket(Bucket="a.b-c1", ACL="private")
            s3.put_object(Bucket="a.b-c1", Key="k", Body=b"body", Metadata={"meta1": "", "two": "v"}, ACL="private")
            head = s3.head_object(Bucket="a.b-c1", Key="k")
            check(head["Metadata"] == {"meta1": "", "two": "v"}, "an empty metadata value: %r" % head["Metadata"])
            got = s3.get_object(Bucket="a.b-c1", Key="k", ResponseContentType="foo/bar", ResponseCacheControl="no-cache",
                                ResponseContentDisposition="attachment; filename=x.bin", ResponseContentLanguage="de",
                                ResponseContentEncoding="identity", ResponseExpires=datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc))
            h = got["ResponseMetadata"]["HTTPHeaders"]
            check((h["content-type"], h["cache-control"], h["content-disposition"], h["content-language"], h["content-encoding"])
                  == ("foo/bar", "no-cache", "attachment; filename=x.bin", "de", "identity"), "response-* overrides: %r" % h)
            check(h["expires"] == "Tue, 01 Jan 2030 00:00:00 GMT" and got["Body"].read() == b"body", "response-expires")
            etag = head["ETag"].strip('"')
            check(s3.get_object(Bucket="a.b-c1", Key="k", IfMatch=etag)["Body"].read() == b"body", "an unquoted If-Match ETag")
            check(code(lambda: s3.get_object(Bucket="a.b-c1", Key="k", IfNoneMatch=etag)) == ("304", 304), "an unquoted If-None-Match ETag")
            check(code(lambda: s3.put_object(Bucket="a.b-c1", Key="k", Body=b"x", ACL="public-read")) == ("NotImplemented", 501),
                  "a public canned ACL")
            check(code(lambda: s3.get_object(Bucket="a.b-c1", Key="k", VersionId="bogus")) == ("InvalidArgument", 400), "a version id")
            check(s3.get_object(Bucket="a.b-c1", Key="k", VersionId="null")["Body"].read() == b"body", "version id null")
            check(code(lambda: s3.get_object_acl(Bucket="a.b-c1", Key="missing")) == ("NoSuchKey", 404), "the ACL of a missing key")
            upload = s3.create_multipart_upload(Bucket="a.b-c1", Key="mp")["UploadId"]
            check(code(lambda: s3.complete_multipart_upload(Bucket="a.b-c1", Key="mp", UploadId=upload, MultipartUpload={"Parts": []}))
                  == ("MalformedXML", 400), "a Complete without parts")
            # GET by part number: part 1 of a single-part object is all of it; a multipart object's
            # parts are their byte ranges.
            got = s3.get_object(Bucket="a.b-c1", Key="k", PartNumber=1)
            # (x-amz-mp-parts-count only for an object uploaded in parts, as AWS documents it)
            check(got["Body"].read() == b"body" and got["ETag"] == head["ETag"] and "PartsCount" not in got, "part 1: %r" % got)
            check(code(lambda: s3.get_object(Bucket="a.b-c1", Key="k", PartNumber=2)) == ("InvalidPartNumber", 416), "part 2")
            check(code(lambda: s3.get_object(Bucket="a.b-c1", Key="k", PartNumber=1, Range="bytes=0-1")) == ("InvalidRequest", 400),
                  "a part number and a range")
            mp = s3.create_multipart_upload(Bucket="a.b-c1", Key="mp2")["UploadId"]
            bodies = [b"p" * (5 << 20), b"q" * (5 << 20) + b"r", b"tail"]
            parts = [{"PartNumber": n + 1, "ETag": s3.upload_part(Bucket="a.b-c1", Key="mp2", UploadId=mp, PartNumber=n + 1, Body=b)["ETag"]}
                     for n, b in enumerate(bodies)]
            whole = s3.complete_multipart_upload(Bucket="a.b-c1", Key="mp2", UploadId=mp, MultipartUpload={"Parts": parts})["ETag"]
            start = 0
            for n, body in enumerate(bodies):
                got = s3.get_object(Bucket="a.b-c1", Key="mp2", PartNumber=n + 1)
                h = got["ResponseMetadata"]["HTTPHeaders"]
                check(got["ResponseMetadata"]["HTTPStatusCode"] == 206 and got["Body"].read() == body and got["PartsCount"] == 3
                      and got["ETag"] == whole and got["ContentLength"] == len(body)
                      and h["content-range"] == "bytes %d-%d/%d" % (start, start + len(body) - 1, sum(map(len, bodies))),
                      "multipart part %d: %r" % (n + 1, h))
                headed = s3.head_object(Bucket="a.b-c1", Key="mp2", PartNumber=n + 1)
                check(headed["ContentLength"] == len(body) and headed["PartsCount"] == 3, "HEAD of part %d" % (n + 1))
                start += len(body)
            check(code(lambda: s3.get_object(Bucket="a.b-c1", Key="mp2", PartNumber=4)) == ("InvalidPartNumber", 416), "part 4 of 3")
            check(code(lambda: s3.copy_object(Bucket="a.b-c1", Key="mp3", CopySource={"Bucket": "a.b-c1", "Key": "mp2"})) is None
                  and s3.get_object(Bucket="a.b-c1", Key="mp3", PartNumber=2)["Body"].read() == bodies[1], "a part of a copy")
            # ListMultipartUploads pages like AWS: max-uploads, key and upload id markers, delimiter.
            s3.abort_multipart_upload(Bucket="a.b-c1", Key="mp", UploadId=upload)
            ids = {key: [s3.create_multipart_upload(Bucket="a.b-c1", Key=key)["UploadId"] for _ in range(n)]
                   for key, n in [("a", 1), ("b/1", 1), ("b/2", 1), ("c", 2)]}
            def listing(**kw):
                r = s3.list_multipart_uploads(Bucket="a.b-c1", **kw)
                return ([(u["Key"], u["UploadId"]) for u in r.get("Uploads", [])], [p["Prefix"] for p in r.get("CommonPrefixes", [])],
                        r["IsTruncated"], r.get("NextKeyMarker"), r.get("NextUploadIdMarker"))
            every = listing()[0]  # c's two uploads by id
            check(sorted(every) == sorted((k, i) for k in ids for i in ids[k]) and [k for k, _ in every] == ["a", "b/1", "b/2", "c", "c"],
                  "all uploads: %r" % (listing(),))
            check(listing()[2:] == (False, None, None), "not truncated")
            check(listing(MaxUploads=2) == (every[:2], [], True, "b/1", ids["b/1"][0]), "two uploads: %r" % (listing(MaxUploads=2),))
            check(listing(KeyMarker="b/1", UploadIdMarker=ids["b/1"][0])[0] == every[2:], "after b/1's upload")
            check(listing(KeyMarker="c", UploadIdMarker=every[3][1])[0] == every[4:], "after c's first upload")
            check(listing(KeyMarker="b/2")[0] == every[3:], "after the key b/2")
            check(listing(Delimiter="/") == ([every[0]] + every[3:], ["b/"], False, None, None), "with a delimiter: %r" % (listing(Delimiter="/"),))
            check(listing(Delimiter="/", MaxUploads=2) == ([every[0]], ["b/"], True, "b/", ""), "a page ending on a common prefix")
            check(listing(MaxUploads=0) == ([], [], False, None, None), "max-uploads 0")
            # A page's last upload aborted before the next page is asked for: nothing is skipped.
            s3.abort_multipart_upload(Bucket="a.b-c1", Key="c", UploadId=every[3][1])
            check(listing(KeyMarker="c", UploadIdMarker=every[3][1])[0] == every[4:], "after an aborted marker upload")
            # ListBuckets pages: prefix, max-buckets and the continuation token.
            for name in ["lb-1", "lb-2", "lb-3"]:
                s3.create_bucket(Bucket=name)
            page = s3.list_buckets(Prefix="lb-", MaxBuckets=2)
            check([b["Name"] for b in page["Buckets"]] == ["lb-1", "lb-2"] and page["Prefix"] == "lb-", "first page: %r" % page)
            rest = s3.list_buckets(Prefix="lb-", MaxBuckets=2, ContinuationToken=page["ContinuationToken"])
            check([b["Name"] for b in rest["Buckets"]] == ["lb-3"] and "ContinuationToken" not in rest, "last page: %r" % rest)
            check([b["Name"] for b in s3.list_buckets()["Buckets"]] == ["a.b-c1", "lb-1", "lb-2", "lb-3"], "every bucket")
            check(code(lambda: s3.list_buckets(MaxBuckets=10001)) == ("InvalidArgument", 400), "max-buckets over 10000")
            url = s3.generate_presigned_url("put_object", Params={"Bucket": "a.b-c1", "Key": "nolength"}, ExpiresIn=300)
            out = subprocess.run(["curl", "-s", "-X", "PUT", "-H", "Content-Length:", "-w", "%{http_code}", url], capture_output=True).stdout
            check(out.endswith(b"411") and b"MissingContentLength" in out, "a PUT without Content-Length: %r" % out)
            """, port: port, blobd: blobd)
    }

    /// A multipart upload with a checksum algorithm: every part carries one, and the object's is
    /// made from the parts' (COMPOSITE) or computed over all of it (FULL_OBJECT), as S3 does.
    @Test func multipartChecksumsAsS3MakesThem() throws {
        let (blobd, port, _) = try S3Tests.start()
        try S3Tests.python(S3Tests.client + """
            import base64, hashlib, zlib
            def b64(data): return base64.b64encode(data).decode()
            s3.create_bucket(Bucket="cks")
            bodies = [b"A" * (5 << 20), b"B" * (5 << 20), b"C" * 1000]
            def upload(key, algorithm, kind=None):
                extra = {"ChecksumType": kind} if kind else {}
                created = s3.create_multipart_upload(Bucket="cks", Key=key, ChecksumAlgorithm=algorithm, **extra)
                check(created["ChecksumAlgorithm"] == algorithm, "the algorithm answered: %r" % created)
                parts = []
                for n, body in enumerate(bodies, 1):
                    part = s3.upload_part(Bucket="cks", Key=key, UploadId=created["UploadId"], PartNumber=n, Body=body,
                                          ChecksumAlgorithm=algorithm)
                    parts.append({"PartNumber": n, "ETag": part["ETag"], "Checksum" + algorithm: part["Checksum" + algorithm]})
                return created, parts

            # SHA-256: composite, the SHA-256 of the parts' SHA-256s, then -3.
            created, parts = upload("sha", "SHA256")
            check(created["ChecksumType"] == "COMPOSITE", "SHA-256 is composite by default")
            want = b64(hashlib.sha256(b"".join(hashlib.sha256(b).digest() for b in bodies)).digest()) + "-3"
            listed = s3.list_parts(Bucket="cks", Key="sha", UploadId=created["UploadId"])["Parts"]
            check([p["ChecksumSHA256"] for p in listed] == [b64(hashlib.sha256(b).digest()) for b in bodies], "ListParts")
            check(code(lambda: s3.complete_multipart_upload(Bucket="cks", Key="sha", UploadId=created["UploadId"],
                  MultipartUpload={"Parts": parts}, ChecksumSHA256="bad")) == ("BadDigest", 400), "a wrong object checksum")
            wrong = [dict(parts[0], ChecksumSHA256=b64(b"x" * 32))] + parts[1:]
            check(code(lambda: s3.complete_multipart_upload(Bucket="cks", Key="sha", UploadId=created["UploadId"],
                  MultipartUpload={"Parts": wrong})) == ("InvalidPart", 400), "a wrong part checksum")
            check(code(lambda: s3.head_object(Bucket="cks", Key="sha")) == ("404", 404), "nothing committed")
            done = s3.complete_multipart_upload(Bucket="cks", Key="sha", UploadId=created["UploadId"],
                                                MultipartUpload={"Parts": parts}, ChecksumSHA256=want)
            check(done["ChecksumSHA256"] == want and done["ChecksumType"] == "COMPOSITE", "Complete: %r" % done)
            head = s3.head_object(Bucket="cks", Key="sha", ChecksumMode="ENABLED")
            check(head["ChecksumSHA256"] == want and head["ChecksumType"] == "COMPOSITE", "HEAD: %r" % head)
            check("ChecksumSHA256" not in s3.head_object(Bucket="cks", Key="sha"), "no checksum unless asked")
            attributes = s3.get_object_attributes(Bucket="cks", Key="sha",
                                                  ObjectAttributes=["ETag", "Checksum", "ObjectParts", "ObjectSize", "StorageClass"])
            check(attributes["ETag"] == done["ETag"].strip('"') and attributes["ObjectSize"] == sum(map(len, bodies))
                  and attributes["Checksum"] == {"ChecksumSHA256": want, "ChecksumType": "COMPOSITE"}
                  and attributes["StorageClass"] == "STANDARD" and attributes["ObjectParts"]["TotalPartsCount"] == 3
                  and [(p["PartNumber"], p["Size"], p["ChecksumSHA256"]) for p in attributes["ObjectParts"]["Parts"]]
                      == [(n, len(b), b64(hashlib.sha256(b).digest())) for n, b in enumerate(bodies, 1)],
                  "GetObjectAttributes: %r" % attributes)
            # A part by its number comes with its own checksum (boto3 checks the bytes against it).
            second = s3.get_object(Bucket="cks", Key="sha", PartNumber=2, ChecksumMode="ENABLED")
            check(second["Body"].read() == bodies[1] and second["ChecksumSHA256"] == b64(hashlib.sha256(bodies[1]).digest())
                  and second["ChecksumType"] == "COMPOSITE", "part 2 with its checksum: %r" % second)
            page = s3.get_object_attributes(Bucket="cks", Key="sha", ObjectAttributes=["ObjectParts"], MaxParts=2)["ObjectParts"]
            check(page["IsTruncated"] and page["NextPartNumberMarker"] == 2 and len(page["Parts"]) == 2, "a page of parts: %r" % page)
            rest = s3.get_object_attributes(Bucket="cks", Key="sha", ObjectAttributes=["ObjectParts"], PartNumberMarker=2)["ObjectParts"]
            check(not rest["IsTruncated"] and [p["PartNumber"] for p in rest["Parts"]] == [3], "the rest: %r" % rest)

            # CRC-32 over the whole object.
            created, parts = upload("crc", "CRC32", "FULL_OBJECT")
            check(created["ChecksumType"] == "FULL_OBJECT", "CRC-32 full object")
            want = b64(zlib.crc32(b"".join(bodies)).to_bytes(4, "big"))
            done = s3.complete_multipart_upload(Bucket="cks", Key="crc", UploadId=created["UploadId"],
                                                MultipartUpload={"Parts": parts}, ChecksumCRC32=want, ChecksumType="FULL_OBJECT")
            check(done["ChecksumCRC32"] == want and done["ChecksumType"] == "FULL_OBJECT", "Complete: %r" % done)
            got = s3.get_object(Bucket="cks", Key="crc", ChecksumMode="ENABLED")  # boto3 checks the body against it
            check(got["Body"].read() == b"".join(bodies) and got["ChecksumCRC32"] == want, "GET with its CRC-32")

            # A part without a checksum gets one; one in another algorithm is refused.
            created = s3.create_multipart_upload(Bucket="cks", Key="mix", ChecksumAlgorithm="SHA1")
            check(code(lambda: s3.upload_part(Bucket="cks", Key="mix", UploadId=created["UploadId"], PartNumber=1, Body=b"x",
                                              ChecksumAlgorithm="CRC32")) == ("InvalidRequest", 400), "another algorithm")
            check(code(lambda: s3.create_multipart_upload(Bucket="cks", Key="bad", ChecksumAlgorithm="SHA256",
                                                          ChecksumType="FULL_OBJECT")) == ("InvalidRequest", 400), "SHA-256 full object")
            """, port: port, blobd: blobd)
    }

    /// Under --public-read an unsigned GET reads, but may not override the answer's headers
    /// (as in S3), or a stored file could be served as HTML.
    @Test func anonymousReadsMayNotOverrideHeaders() throws {
        let (blobd, port, _) = try S3Tests.start(["--public-read"])
        try S3Tests.python(S3Tests.client + """
            s3.create_bucket(Bucket="pub")
            s3.put_object(Bucket="pub", Key="page.svg", Body=b"<svg/>", ContentType="image/svg+xml")
            base = os.environ["ENDPOINT"] + "/pub/page.svg"
            out = subprocess.run(["curl", "-s", "-w", "%{http_code} %{content_type}", base], capture_output=True).stdout
            check(out == b"<svg/>200 image/svg+xml", "an anonymous GET: %r" % out)
            out = subprocess.run(["curl", "-s", "-w", "%{http_code}", base + "?response-content-type=text/html"], capture_output=True).stdout
            check(out.endswith(b"400") and b"InvalidRequest" in out, "an anonymous override: %r" % out)
            got = s3.get_object(Bucket="pub", Key="page.svg", ResponseContentType="text/plain")
            check(got["ContentType"] == "text/plain", "a signed override")
            """, port: port, blobd: blobd)
    }
}

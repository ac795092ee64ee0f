import Foundation
import LiveBlobd
import Testing

/// S3 versioning (issue 25) with boto3, aws-cli and rclone against the real blobd: every write
/// of an enabled bucket is a version, deletes leave delete markers, versions are read, copied,
/// removed and listed by id, a suspended bucket writes the `null` version, and blobs stored
/// before versioning are `null` versions.
@Suite struct VersioningTests {
    static let prelude = GrantMatrixTests.prelude + """
        admin = s3("ADMIN", "admin-secret")
        def versions(bucket, **args):
            answer = admin.list_object_versions(Bucket=bucket, **args)
            entries = [(v["Key"], v["VersionId"], v["IsLatest"], "v") for v in answer.get("Versions", [])]
            entries += [(v["Key"], v["VersionId"], v["IsLatest"], "m") for v in answer.get("DeleteMarkers", [])]
            return answer, entries
        def error(call):
            try:
                call()
            except botocore.exceptions.ClientError as e:
                return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["ResponseMetadata"]["HTTPHeaders"]
            return None
        def cli(*args):
            env = dict(os.environ, AWS_ACCESS_KEY_ID="ADMIN", AWS_SECRET_ACCESS_KEY="admin-secret", AWS_DEFAULT_REGION="us-east-1")
            r = subprocess.run(["aws", "--endpoint-url", os.environ["ENDPOINT"]] + list(args), env=env, capture_output=True)
            check(r.returncode == 0, "aws %r: %r" % (args, r.stderr))
            return r.stdout

        """

    static func python(_ script: String) throws {
        let (blobd, port, _) = try GrantMatrixTests.start()
        let result = try run("/usr/bin/env", ["ENDPOINT=http://127.0.0.1:\(port)", "V1=\(blobd.baseURL)",
                                              "python3", "-c", prelude + script], timeout: 300)
        #expect(result.status == 0, "\(result.stderr)\n\(String(decoding: result.stdout, as: UTF8.self))")
    }

    /// Put, get, delete and list versions with boto3; the null version of a blob stored
    /// before versioning; removing a marker or a version promotes the next; copy from a version.
    @Test func versionsWithBoto3() throws {
        try Self.python("""
            admin.create_bucket(Bucket="vers")
            admin.put_object(Bucket="vers", Key="pre", Body=b"before versioning")
            check("Status" not in admin.get_bucket_versioning(Bucket="vers"), "unversioned")
            check("VersionId" not in admin.put_object(Bucket="vers", Key="plain", Body=b"p"), "no version id while unversioned")
            admin.put_bucket_versioning(Bucket="vers", VersioningConfiguration={"Status": "Enabled"})
            check(admin.get_bucket_versioning(Bucket="vers")["Status"] == "Enabled", "enabled")
            ids = [admin.put_object(Bucket="vers", Key="k", Body=b"v%d" % i)["VersionId"] for i in range(3)]
            check(len(set(ids)) == 3 and all(len(i) == 32 for i in ids), "three version ids: %r" % ids)
            for i, vid in enumerate(ids):
                got = admin.get_object(Bucket="vers", Key="k", VersionId=vid)
                check(got["Body"].read() == b"v%d" % i and got["VersionId"] == vid, "version %d by id" % i)
                check(admin.head_object(Bucket="vers", Key="k", VersionId=vid)["ContentLength"] == 2, "HEAD version %d" % i)
            check(admin.get_object(Bucket="vers", Key="k")["VersionId"] == ids[2], "the latest is current")
            check(admin.get_object(Bucket="vers", Key="pre", VersionId="null")["Body"].read() == b"before versioning", "null version")
            gone = admin.delete_object(Bucket="vers", Key="k")
            check(gone["DeleteMarker"] is True and len(gone["VersionId"]) == 32, "a delete marker: %r" % gone)
            code_, status, headers = error(lambda: admin.get_object(Bucket="vers", Key="k"))
            check((code_, status, headers.get("x-amz-delete-marker")) == ("NoSuchKey", 404, "true"), "GET after delete")
            check(error(lambda: admin.get_object(Bucket="vers", Key="k", VersionId=gone["VersionId"]))[:2] == ("MethodNotAllowed", 405),
                  "GET of the marker's version")
            check(error(lambda: admin.get_object(Bucket="vers", Key="k", VersionId="0" * 32))[:2] == ("NoSuchVersion", 404), "no such version")
            check(error(lambda: admin.get_object(Bucket="vers", Key="k", VersionId="bogus"))[:2] == ("InvalidArgument", 400), "bad id")
            answer, listed = versions("vers", Prefix="k")
            check(listed == [("k", ids[2], False, "v"), ("k", ids[1], False, "v"), ("k", ids[0], False, "v"),
                             ("k", gone["VersionId"], True, "m")], "listed %r" % listed)
            # Removing the marker brings v2 back; removing v2 makes v1 current.
            removed = admin.delete_object(Bucket="vers", Key="k", VersionId=gone["VersionId"])
            check(removed["DeleteMarker"] is True and removed["VersionId"] == gone["VersionId"], "marker removed")
            check(admin.get_object(Bucket="vers", Key="k")["Body"].read() == b"v2", "v2 is back")
            check(admin.delete_object(Bucket="vers", Key="k", VersionId=ids[2])["VersionId"] == ids[2], "v2 removed")
            check(admin.get_object(Bucket="vers", Key="k")["Body"].read() == b"v1", "v1 is current")
            check(error(lambda: admin.get_object(Bucket="vers", Key="k", VersionId=ids[2]))[:2] == ("NoSuchVersion", 404), "v2 gone")
            # Copy from a version; the copy is a version of its own.
            copied = admin.copy_object(Bucket="vers", Key="copy", CopySource={"Bucket": "vers", "Key": "k", "VersionId": ids[0]})
            check(copied["CopySourceVersionId"] == ids[0] and len(copied["VersionId"]) == 32, "copy answers: %r" % copied)
            check(admin.get_object(Bucket="vers", Key="copy")["Body"].read() == b"v0", "copied from v0")
            # A multipart upload is a version too.
            upload = admin.create_multipart_upload(Bucket="vers", Key="k")["UploadId"]
            part = admin.upload_part(Bucket="vers", Key="k", UploadId=upload, PartNumber=1, Body=b"multi")["ETag"]
            done = admin.complete_multipart_upload(Bucket="vers", Key="k", UploadId=upload,
                                                   MultipartUpload={"Parts": [{"ETag": part, "PartNumber": 1}]})
            check(len(done["VersionId"]) == 32, "Complete names its version")
            check(admin.get_object(Bucket="vers", Key="k", VersionId=ids[1])["Body"].read() == b"v1", "v1 kept after Complete")
            # DeleteObjects with and without VersionId.
            result = admin.delete_objects(Bucket="vers", Delete={"Objects": [{"Key": "copy"}, {"Key": "k", "VersionId": ids[0]}]})
            deleted = {d["Key"]: d for d in result["Deleted"]}
            check(deleted["copy"]["DeleteMarker"] is True and len(deleted["copy"]["DeleteMarkerVersionId"]) == 32, "batch marker")
            check(deleted["k"]["VersionId"] == ids[0], "batch version")
            check(error(lambda: admin.get_object(Bucket="vers", Key="k", VersionId=ids[0]))[:2] == ("NoSuchVersion", 404), "v0 gone")
            # A bucket with versions left is not empty.
            check(error(lambda: admin.delete_bucket(Bucket="vers"))[:2] == ("BucketNotEmpty", 409), "versions keep the bucket")
            """)
    }

    /// A suspended bucket writes the `null` version over and over, keeping versions with ids;
    /// a delete there is a `null` delete marker.
    @Test func suspendedBucket() throws {
        try Self.python("""
            admin.create_bucket(Bucket="susp")
            admin.put_bucket_versioning(Bucket="susp", VersioningConfiguration={"Status": "Enabled"})
            kept = admin.put_object(Bucket="susp", Key="k", Body=b"kept")["VersionId"]
            admin.put_bucket_versioning(Bucket="susp", VersioningConfiguration={"Status": "Suspended"})
            check(admin.get_bucket_versioning(Bucket="susp")["Status"] == "Suspended", "suspended")
            check(admin.put_object(Bucket="susp", Key="k", Body=b"one")["VersionId"] == "null", "null version")
            check(admin.put_object(Bucket="susp", Key="k", Body=b"two")["VersionId"] == "null", "null version again")
            _, listed = versions("susp")
            check(listed == [("k", "null", True, "v"), ("k", kept, False, "v")], "listed %r" % listed)
            check(admin.get_object(Bucket="susp", Key="k", VersionId="null")["Body"].read() == b"two", "the null version replaced")
            gone = admin.delete_object(Bucket="susp", Key="k")
            check(gone["DeleteMarker"] is True and gone["VersionId"] == "null", "a null marker: %r" % gone)
            _, listed = versions("susp")
            check(listed == [("k", kept, False, "v"), ("k", "null", True, "m")], "after delete %r" % listed)
            check(error(lambda: admin.put_bucket_versioning(Bucket="susp", VersioningConfiguration={"Status": "Enabled", "MFADelete": "Enabled"}))[:2]
                  == ("NotImplemented", 501), "MFA Delete is refused")
            check(error(lambda: admin.put_bucket_versioning(Bucket="susp", VersioningConfiguration={"Status": "Off"}))[:2]
                  == ("MalformedXML", 400), "a bad status")
            """)
    }

    /// ListObjectVersions pages by key-marker and version-id-marker (boto3's paginator and
    /// aws-cli), rolls up by a delimiter; get-object --version-id with aws-cli; rclone
    /// --s3-versions lists the old versions.
    @Test func listingsWithEveryClient() throws {
        try Self.python("""
            admin.create_bucket(Bucket="list")
            admin.put_bucket_versioning(Bucket="list", VersioningConfiguration={"Status": "Enabled"})
            made = []
            for key in ["a", "b", "dir/x", "dir/y", "c"]:
                for i in range(3):
                    made.append((key, admin.put_object(Bucket="list", Key=key, Body=(key + str(i)).encode())["VersionId"]))
            admin.delete_object(Bucket="list", Key="c")
            _, whole = versions("list")
            check(len(whole) == 16, "16 entries: %r" % whole)
            pages = []
            for page in admin.get_paginator("list_object_versions").paginate(Bucket="list", PaginationConfig={"PageSize": 4}):
                pages += [(v["Key"], v["VersionId"]) for v in page.get("Versions", [])] + [(v["Key"], v["VersionId"]) for v in page.get("DeleteMarkers", [])]
            check(sorted(pages) == sorted((k, v) for k, v, _, _ in whole) and len(pages) == 16, "paged: %r" % pages)
            first, _ = versions("list", MaxKeys=4)
            check(first["IsTruncated"] and first["NextKeyMarker"] == "b" and first["NextVersionIdMarker"] == made[5][1],
                  "markers: %r %r" % (first.get("NextKeyMarker"), first.get("NextVersionIdMarker")))
            rolled, entries = versions("list", Delimiter="/")
            check([p["Prefix"] for p in rolled["CommonPrefixes"]] == ["dir/"] and all(not e[0].startswith("dir/") for e in entries), "rolled up")
            # aws-cli.
            listed = json.loads(cli("s3api", "list-object-versions", "--bucket", "list", "--prefix", "a"))
            check([v["VersionId"] for v in listed["Versions"]] == [v for k, v in reversed(made) if k == "a"], "aws-cli versions")
            out = "/tmp/blobd-version-%d" % os.getpid()
            cli("s3api", "get-object", "--bucket", "list", "--key", "a", "--version-id", made[0][1], out)
            check(open(out, "rb").read() == b"a0", "aws-cli get-object --version-id")
            os.remove(out)
            # rclone --s3-versions shows the old versions beside the current files.
            env = dict(os.environ, RCLONE_CONFIG_B_TYPE="s3", RCLONE_CONFIG_B_PROVIDER="Other", RCLONE_CONFIG_B_ACCESS_KEY_ID="ADMIN",
                       RCLONE_CONFIG_B_SECRET_ACCESS_KEY="admin-secret", RCLONE_CONFIG_B_ENDPOINT=os.environ["ENDPOINT"],
                       RCLONE_CONFIG_B_REGION="us-east-1")
            env.pop("AWS_CA_BUNDLE", None)
            r = subprocess.run(["rclone", "--config", "/dev/null", "lsf", "--s3-versions", "b:list"], capture_output=True, env=env)
            names = sorted(r.stdout.decode().split())
            check(r.returncode == 0 and "a" in names and "b" in names and len([n for n in names if n.startswith("a-v")]) == 2,
                  "rclone --s3-versions: %r %r" % (names, r.stderr))
            """)
    }

    /// /v1: PUT, POST-free tus and S3 writes all make versions of a versioned bucket; GET,
    /// HEAD and DELETE with `?version=`, the `?versions` listing paged by its cursor, the
    /// `Blob-Version` header; a bucket never versioned answers as before.
    @Test func versionsThroughV1() throws {
        try Self.python("""
            import requests, base64
            auth = {"Authorization": "Bearer admin"}
            def v1(method, path, data=None, headers={}):
                r = requests.request(method, V1 + path, data=data, headers=dict(auth, **headers))
                return r.status_code, r.headers, r.content
            admin.create_bucket(Bucket="vone")
            status, headers, _ = v1("PUT", "/v1/blobs/vone/plain", b"p")
            check(status == 201 and "Blob-Version" not in headers, "unversioned: no Blob-Version")
            admin.put_bucket_versioning(Bucket="vone", VersioningConfiguration={"Status": "Enabled"})
            made = []
            for body in [b"one", b"two"]:
                status, headers, _ = v1("PUT", "/v1/blobs/vone/k", body)
                check(status in (200, 201) and len(headers["Blob-Version"]) == 32, "PUT names its version: %r" % headers)
                made.append(headers["Blob-Version"])
            made.append(admin.put_object(Bucket="vone", Key="k", Body=b"three")["VersionId"])
            # tus: the finished upload is a version too.
            status, headers, _ = v1("POST", "/v1/uploads", headers={"Tus-Resumable": "1.0.0", "Upload-Length": "4",
                                    "Upload-Metadata": "key " + base64.b64encode(b"vone/k").decode()})
            check(status == 201, "tus create %d" % status)
            location = headers["Location"]
            location = location if location.startswith("/") else "/" + location.split("/", 3)[3]
            status, _, _ = v1("PATCH", location, b"four", {"Tus-Resumable": "1.0.0", "Upload-Offset": "0",
                                                             "Content-Type": "application/offset+octet-stream"})
            check(status == 204, "tus patch %d" % status)
            status, headers, body = v1("GET", "/v1/blobs/vone/k")
            check(body == b"four" and len(headers["Blob-Version"]) == 32, "GET names the current version")
            made.append(headers["Blob-Version"])
            for vid, want in zip(made, [b"one", b"two", b"three", b"four"]):
                status, headers, body = v1("GET", "/v1/blobs/vone/k?version=" + vid)
                check((status, body, headers["Blob-Version"]) == (200, want, vid), "version %s" % want)
                check(v1("HEAD", "/v1/blobs/vone/k?version=" + vid)[0] == 200, "HEAD version")
            check(v1("GET", "/v1/blobs/vone/k?version=" + "0" * 32)[0] == 404, "no such version")
            check(v1("GET", "/v1/blobs/vone/k?version=bogus")[0] == 400, "a bad version")
            # The listing, newest first, a page at a time.
            listed, after = [], None
            while True:
                status, _, body = v1("GET", "/v1/blobs/vone/k?versions&limit=1" + ("&after=" + after if after else ""))
                page = json.loads(body)
                check(status == 200 and len(page["versions"]) <= 1, "a page of one")
                listed += page["versions"]
                after = page["next"]
                if after is None: break
            check([v["version"] for v in listed] == list(reversed(made)), "listed %r" % listed)
            check([v["latest"] for v in listed] == [True, False, False, False], "latest")
            check(listed[0]["sha256"] == sha(b"four") and listed[0]["size"] == 4, "fields")
            # DELETE: a marker; GET 404; the marker removed by version brings the blob back.
            status, headers, _ = v1("DELETE", "/v1/blobs/vone/k")
            check(status == 204 and headers["Blob-Delete-Marker"] == "true", "DELETE makes a marker")
            marker = headers["Blob-Version"]
            check(v1("GET", "/v1/blobs/vone/k")[0] == 404, "deleted")
            check(v1("DELETE", "/v1/blobs/vone/k")[0] == 404, "nothing current to delete")
            versions_now = json.loads(v1("GET", "/v1/blobs/vone/k?versions")[2])["versions"]
            check(versions_now[0]["delete_marker"] and versions_now[0]["version"] == marker, "the marker is the latest")
            check(v1("DELETE", "/v1/blobs/vone/k?version=" + marker)[0] == 204, "marker removed")
            check(v1("GET", "/v1/blobs/vone/k")[2] == b"four", "back")
            check(v1("DELETE", "/v1/blobs/vone/k?version=" + made[3])[0] == 204, "a version removed")
            check(v1("GET", "/v1/blobs/vone/k")[2] == b"three", "the previous version is current")
            check(v1("DELETE", "/v1/blobs/vone/k?version=" + made[3])[0] == 404, "removed already")
            check(admin.get_object(Bucket="vone", Key="plain", VersionId="null")["Body"].read() == b"p", "the null version")
            """)
    }
}

import Foundation
import LiveBlobd
import Testing

/// What outside checks found in v1.2 (issue 35), against the real blobd with real clients
/// (curl, boto3, requests): a hook that moves an upload past its grants, credentials sent to
/// hooks, duplicate policy members, POST Object forms, upload links, revocation mid-body,
/// DeleteObjects and governance bypass, version copies, and one bucket namespace.
@Suite struct OutsideFindingsTests {
    static let tokens = """
        admin read,write,delete,admin,share
        inbox create:bbb/inbox/*
        s3 ADMIN admin-secret read,write,delete,admin
        s3 PART part-secret read,delete:bbb/mine/*
        s3 NONE none-secret read:zzz

        """

    /// A tusd-style pre-create hook: it records each request, and moves an upload whose
    /// metadata `filename` is `evil` to `bbb/vault/plan.txt`, one named `taken` to `bbb/inbox/taken`.
    static let hook = """
        import json, sys, http.server, threading
        log = open(sys.argv[2], "a")
        class Hook(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args): pass
            def do_POST(self):
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                log.write(json.dumps(request) + "\\n"); log.flush()
                meta, answer = request["Event"]["Upload"]["MetaData"], {}
                moved = {"evil": "bbb/vault/plan.txt", "taken": "bbb/inbox/taken"}.get(meta.get("filename"))
                if request["Type"] == "pre-create" and moved:
                    answer = {"ChangeFileInfo": {"MetaData": dict(meta, key=moved)}}
                body = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hook)
        open(sys.argv[1], "w").write(str(server.server_address[1]))
        timer = threading.Timer(240, server.shutdown); timer.daemon = True; timer.start()
        server.serve_forever()
        """

    static let prelude = """
        import os, sys, json, base64, socket, subprocess, requests, boto3, botocore
        from botocore.config import Config
        V1, ENDPOINT, LOG = os.environ["V1"], os.environ["ENDPOINT"], os.environ["LOG"]
        ADMIN = {"Authorization": "Bearer admin"}
        def check(condition, what):
            if not condition: sys.exit("FAILED: " + what)
        def s3(key, secret):
            return boto3.client("s3", endpoint_url=ENDPOINT, region_name="us-east-1", aws_access_key_id=key,
                                aws_secret_access_key=secret, config=Config(signature_version="s3v4", retries={"max_attempts": 1}))
        def error(fn):
            try:
                fn()
            except botocore.exceptions.ClientError as e:
                return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]
            return None
        def b64(text): return base64.b64encode(text.encode()).decode()
        def tus_create(token, key, filename, body):
            return requests.post(V1 + "/v1/uploads", data=body, headers={
                "Authorization": "Bearer " + token, "Tus-Resumable": "1.0.0", "Upload-Length": str(len(body)),
                "Content-Type": "application/offset+octet-stream",
                "Upload-Metadata": "key %s,filename %s" % (b64(key), b64(filename))})
        admin = s3("ADMIN", "admin-secret")

        """

    static func run(_ script: String) throws {
        let dir = TempDir()
        let tokens = dir.file("tokens", Array(tokens.utf8))
        chmod(tokens, 0o600)
        let portFile = dir.path + "/hook-port", log = dir.path + "/hooks.jsonl"
        let hookProcess = ChildProcess()
        hookProcess.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        hookProcess.arguments = ["-c", hook, portFile, log]
        try hookProcess.run()
        defer { hookProcess.stop() }
        #expect(eventually(within: 10) { ((try? String(contentsOfFile: portFile, encoding: .utf8)) ?? "").count > 1 })
        let port = try String(contentsOfFile: portFile, encoding: .utf8)
        let blobd = try BlobdProcess(["--tokens-file", tokens, "--s3-listen", "127.0.0.1:0",
                                      "--hook-url", "http://127.0.0.1:\(port)/hooks", "--hook-events", "pre-create"])
        let s3Port = try #require(blobd.s3Port)
        let result = try LiveBlobd.run("/usr/bin/env", ["V1=\(blobd.baseURL)", "ENDPOINT=http://127.0.0.1:\(s3Port)", "LOG=\(log)",
                                                        "python3", "-c", prelude + script], timeout: 240)
        #expect(result.status == 0, "\(result.stderr)\n\(String(decoding: result.stdout, as: UTF8.self))")
    }

    /// Items 1 and 3: the hook's key is checked against the caller's grants (and create-only);
    /// the hook is not told the client's Authorization.
    @Test func aHookCannotMoveAnUploadPastItsGrants() throws {
        try Self.run("""
            check(requests.put(V1 + "/v1/blobs/bbb/vault/plan.txt", data=b"the plan", headers=ADMIN).status_code == 201, "seed")
            check(requests.put(V1 + "/v1/blobs/bbb/inbox/taken", data=b"first", headers=ADMIN).status_code == 201, "seed 2")
            r = tus_create("inbox", "bbb/inbox/note.txt", "evil", b"overwritten")
            check(r.status_code == 403, "a hook's key outside the grants: %d %s" % (r.status_code, r.text))
            check(requests.get(V1 + "/v1/blobs/bbb/vault/plan.txt", headers=ADMIN).content == b"the plan", "the vault is intact")
            r = tus_create("inbox", "bbb/inbox/new.txt", "taken", b"second")
            check(r.status_code == 403, "create-only on the hook's key: %d %s" % (r.status_code, r.text))
            check(requests.get(V1 + "/v1/blobs/bbb/inbox/taken", headers=ADMIN).content == b"first", "the taken key is intact")
            r = tus_create("inbox", "bbb/inbox/fine.txt", "fine", b"fine")
            check(r.status_code == 201, "an upload the grants allow: %d %s" % (r.status_code, r.text))
            seen = [json.loads(line) for line in open(LOG)]
            check(len(seen) == 5, "five pre-create calls (two PUTs, three tus): %d" % len(seen))
            for request in seen:
                header = request["Event"]["HTTPRequest"]["Header"]
                check("Authorization" not in header and "User-Agent" in header, "no credentials to the hook: %r" % header)
            """)
    }

    /// Items 4 and 5: a policy naming a member twice is MalformedPolicy; POST Object holds every
    /// content-length-range, and a form with two files is refused.
    @Test func policiesAndFormsSayOneThing() throws {
        try Self.run("""
            admin.create_bucket(Bucket="forms")
            policy = '{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Effect":"Allow","Principal":"*",' \\
                     '"Action":"s3:GetObject","Resource":"arn:aws:s3:::forms/*"}]}'
            check(error(lambda: admin.put_bucket_policy(Bucket="forms", Policy=policy)) == ("MalformedPolicy", 400), "duplicate Effect")
            check(error(lambda: admin.get_bucket_policy(Bucket="forms"))[0] == "NoSuchBucketPolicy", "nothing stored")
            post = admin.generate_presigned_post("forms", "up/${filename}",
                Conditions=[["starts-with", "$key", "up/"], ["content-length-range", 0, 10], ["content-length-range", 20, 30]])
            r = requests.post(post["url"], data=post["fields"], files={"file": ("ten.txt", b"0123456789")})
            check(r.status_code == 400 and b"EntityTooSmall" in r.content, "no size meets both ranges: %d %r" % (r.status_code, r.content))
            check(error(lambda: admin.head_object(Bucket="forms", Key="up/ten.txt")) is not None, "nothing stored for it")
            post = admin.generate_presigned_post("forms", "up/${filename}", Conditions=[["starts-with", "$key", "up/"]])
            r = requests.post(post["url"], data=post["fields"], files=[("file", ("a.txt", b"a")), ("file", ("b.txt", b"b"))])
            check(r.status_code == 400, "two files: %d %r" % (r.status_code, r.content))
            check(error(lambda: admin.head_object(Bucket="forms", Key="up/a.txt")) is not None, "nothing stored for two files")
            """)
    }

    /// Items 6 and 7: an upload link sees only its own uploads; a key revoked while its body
    /// arrives stores nothing.
    @Test func linksSeeTheirOwnUploadsAndRevocationStopsACommit() throws {
        try Self.run("""
            link = requests.post(V1 + "/v1/shares", json={"prefix": "bbb/drop/", "allow": "upload"}, headers=ADMIN).json()
            link["url"] = requests.compat.urljoin(V1, link["url"].rstrip("/"))
            mine = requests.post(link["url"] + "/uploads", headers={"Tus-Resumable": "1.0.0", "Upload-Length": "5",
                                 "Upload-Metadata": "key " + b64("mine.txt")})
            check(mine.status_code == 201, "an upload through the link: %d %s" % (mine.status_code, mine.text))
            other = requests.post(V1 + "/v1/uploads", headers={**ADMIN, "Tus-Resumable": "1.0.0", "Upload-Length": "5",
                                  "Upload-Metadata": "key " + b64("bbb/drop/other.txt")})
            check(other.status_code == 201, "another principal's upload: %d" % other.status_code)
            other_id = other.headers["Location"].rsplit("/", 1)[1]
            tus = {"Tus-Resumable": "1.0.0"}
            check(requests.head(requests.compat.urljoin(V1, mine.headers["Location"]), headers=tus).status_code == 200, "the link's own upload")
            check(requests.head(link["url"] + "/uploads/" + other_id, headers=tus).status_code == 404, "HEAD of another's upload")
            check(requests.delete(link["url"] + "/uploads/" + other_id, headers=tus).status_code == 404, "DELETE of another's upload")
            check(requests.head(V1 + "/v1/uploads/" + other_id, headers={**ADMIN, **tus}).status_code == 200, "it is still there")
            host, port = V1[len("http://"):].split(":")
            def revoked_mid_body(head):
                key = requests.post(V1 + "/v1/admin/keys", json={"name": "temp", "grants": ["write:bbb/*"]}, headers=ADMIN).json()
                sock = socket.create_connection((host, int(port)))
                sock.sendall((head % key["token"]).encode() + b"x" * 1000000)
                check(requests.delete(V1 + "/v1/admin/keys/" + key["id"], headers=ADMIN).status_code in (200, 204), "revoke")
                sock.sendall(b"x" * 1000000)
                answer = b""
                while b"\\r\\n\\r\\n" not in answer:
                    chunk = sock.recv(65536)
                    if not chunk: break
                    answer += chunk
                sock.close()
                return answer
            answer = revoked_mid_body("PUT /v1/blobs/bbb/late.bin HTTP/1.1\\r\\nHost: x\\r\\nAuthorization: Bearer %s\\r\\n"
                                      "Content-Length: 2000000\\r\\n\\r\\n")
            check(answer.startswith(b"HTTP/1.1 401"), "PUT revoked mid-body: %r" % answer[:200])
            check(requests.get(V1 + "/v1/blobs/bbb/late.bin", headers=ADMIN).status_code == 404, "nothing stored")
            answer = revoked_mid_body("POST /v1/uploads HTTP/1.1\\r\\nHost: x\\r\\nAuthorization: Bearer %s\\r\\n"
                                      "Tus-Resumable: 1.0.0\\r\\nUpload-Length: 2000000\\r\\nUpload-Metadata: key " + b64("bbb/late-tus.bin")
                                      + "\\r\\nContent-Type: application/offset+octet-stream\\r\\nContent-Length: 2000000\\r\\n\\r\\n")
            check(answer.startswith(b"HTTP/1.1 401"), "tus revoked mid-body: %r" % answer[:200])
            check(requests.get(V1 + "/v1/blobs/bbb/late-tus.bin", headers=ADMIN).status_code == 404, "nothing stored by tus")
            """)
    }

    /// Items 8 to 11: DeleteObjects answers per key; a governance bypass from a non-admin key
    /// bypasses nothing but refuses nothing unlocked; copies name their source version, and a
    /// copy of an older version onto its own key restores it.
    @Test func s3AnswersRealClientsExpect() throws {
        try Self.run("""
            admin.create_bucket(Bucket="bbb")
            for key in ["mine/a", "mine/b", "vault/plan.txt"]:
                admin.put_object(Bucket="bbb", Key=key, Body=b"x")
            part, none = s3("PART", "part-secret"), s3("NONE", "none-secret")
            answer = part.delete_objects(Bucket="bbb", Delete={"Objects": [{"Key": "mine/a"}, {"Key": "vault/plan.txt"}]})
            check(answer["ResponseMetadata"]["HTTPStatusCode"] == 200, "DeleteObjects with some grants: %r" % answer)
            check([d["Key"] for d in answer.get("Deleted", [])] == ["mine/a"], "deleted: %r" % answer)
            check([(e["Key"], e["Code"]) for e in answer.get("Errors", [])] == [("vault/plan.txt", "AccessDenied")], "refused: %r" % answer)
            answer = none.delete_objects(Bucket="bbb", Delete={"Objects": [{"Key": "mine/b"}]})
            check([(e["Key"], e["Code"]) for e in answer.get("Errors", [])] == [("mine/b", "AccessDenied")], "no grants: %r" % answer)
            check(admin.head_object(Bucket="bbb", Key="vault/plan.txt")["ContentLength"] == 1, "the refused key stays")
            part.delete_object(Bucket="bbb", Key="mine/b", BypassGovernanceRetention=True)
            check(error(lambda: admin.head_object(Bucket="bbb", Key="mine/b")) is not None, "deleted with the bypass header")
            admin.create_bucket(Bucket="vvv", ObjectLockEnabledForBucket=True)
            admin.put_object(Bucket="vvv", Key="k", Body=b"old")
            locked = admin.put_object(Bucket="vvv", Key="g", Body=b"g", ObjectLockMode="GOVERNANCE",
                                      ObjectLockRetainUntilDate=__import__("datetime").datetime(2099, 1, 1))
            check(error(lambda: part.delete_object(Bucket="vvv", Key="g", VersionId=locked["VersionId"],
                                                   BypassGovernanceRetention=True))[0] == "AccessDenied", "a non-admin bypasses no lock")
            admin.put_bucket_versioning(Bucket="vvv", VersioningConfiguration={"Status": "Enabled"})
            v1 = admin.head_object(Bucket="vvv", Key="k")["VersionId"]
            v2 = admin.put_object(Bucket="vvv", Key="k", Body=b"new")["VersionId"]
            copy = admin.copy_object(Bucket="vvv", Key="copy", CopySource={"Bucket": "vvv", "Key": "k"})
            check(copy.get("CopySourceVersionId") == v2, "the current version copied: %r" % copy)
            restore = admin.copy_object(Bucket="vvv", Key="k", CopySource={"Bucket": "vvv", "Key": "k", "VersionId": v1})
            check(restore.get("CopySourceVersionId") == v1, "the version restored: %r" % restore)
            check(admin.get_object(Bucket="vvv", Key="k")["Body"].read() == b"old", "k is the old bytes again")
            check(error(lambda: admin.copy_object(Bucket="vvv", Key="k", CopySource={"Bucket": "vvv", "Key": "k"}))[0]
                  == "InvalidRequest", "a plain copy to itself is still refused")
            upload = admin.create_multipart_upload(Bucket="vvv", Key="mp")
            part_copy = admin.upload_part_copy(Bucket="vvv", Key="mp", UploadId=upload["UploadId"], PartNumber=1,
                                               CopySource={"Bucket": "vvv", "Key": "k", "VersionId": v2})
            check(part_copy.get("CopySourceVersionId") == v2, "UploadPartCopy names its source version: %r" % part_copy)
            """)
    }

    /// Item 14: a /v1 write makes its bucket an S3 bucket; a first segment S3 would refuse is 400.
    @Test func oneBucketNamespace() throws {
        try Self.run("""
            r = requests.put(V1 + "/v1/blobs/Not_A_Bucket/x", data=b"x", headers=ADMIN)
            check(r.status_code == 400 and r.headers["Content-Type"] == "application/problem+json", "an S3-invalid bucket: %d" % r.status_code)
            check(requests.put(V1 + "/v1/blobs/fromv1/dir/x.txt", data=b"hello", headers=ADMIN).status_code == 201, "a /v1 PUT")
            check("fromv1" in [b["Name"] for b in admin.list_buckets()["Buckets"]], "ListBuckets sees it")
            keys = [o["Key"] for o in admin.list_objects_v2(Bucket="fromv1").get("Contents", [])]
            check(keys == ["dir/x.txt"], "ListObjectsV2: %r" % keys)
            r = tus_create("admin", "fromtus/y.txt", "y.txt", b"tus")
            check(r.status_code == 201 and admin.get_object(Bucket="fromtus", Key="y.txt")["Body"].read() == b"tus", "a tus upload's bucket")
            check(requests.post(V1 + "/v1/blobs", data=b"content-addressed", headers=ADMIN).status_code == 201, "one segment needs no bucket")
            """)
    }
}

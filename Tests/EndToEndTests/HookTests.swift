import Foundation
import LiveBlobd
import Testing

/// tusd's blocking hooks (`--hook-url`, issue 23) against the real blobd: a handler written for
/// tusd (Python's http.server, tusd's request and response JSON) rejects uploads by their
/// metadata before any body byte is stored, changes metadata, adds answer headers at
/// pre-finish or rejects there; a hook past `--hook-timeout` or gone gives 503. Through tus,
/// /v1 PUT and S3 PutObject, CreateMultipartUpload and Complete; nothing rejected is stored.
@Suite struct HookTests {
    /// The tusd-style handler: it records every hook request, one JSON line each, in `argv[2]`.
    static let handler = """
        import json, sys, time, http.server, threading
        log = open(sys.argv[2], "a")
        class Hook(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args): pass
            def do_POST(self):
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                log.write(json.dumps(request) + "\\n"); log.flush()
                upload, answer = request["Event"]["Upload"], {}
                meta = upload["MetaData"]
                name = meta.get("filename", "") + meta.get("key", "")
                if "slow" in name:
                    time.sleep(3)
                if request["Type"] == "pre-create":
                    if name.endswith(".exe"):
                        answer = {"RejectUpload": True, "HTTPResponse": {"StatusCode": 403, "Body": '{"message":"no executables"}',
                                                                         "Header": {"Content-Type": "application/json"}}}
                    elif meta.get("project") == "rename":
                        changed = dict(meta, checked="yes", filetype="text/x-checked")
                        changed.pop("project")
                        answer = {"ChangeFileInfo": {"MetaData": changed}}
                else:
                    if "late-reject" in name:
                        answer = {"RejectUpload": True, "HTTPResponse": {"StatusCode": 422, "Body": "too late"}}
                    else:
                        answer = {"HTTPResponse": {"Header": {"X-Hook": "finished"}}}
                body = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hook)
        open(sys.argv[1], "w").write(str(server.server_address[1]))
        timer = threading.Timer(240, server.shutdown)
        timer.daemon = True
        timer.start()
        server.serve_forever()
        """

    static let client = """
        import os, sys, json, subprocess, boto3, botocore, tusclient.client, tusclient.exceptions
        from botocore.config import Config
        V1, ENDPOINT, LOG = os.environ["V1"], os.environ["ENDPOINT"], os.environ["LOG"]
        def check(condition, what):
            if not condition:
                sys.exit("FAILED: " + what)
        def curl(*args, data=None):
            r = subprocess.run(["curl", "-s", "-D", "/dev/stderr", "-o", "/dev/stdout", "-w", "\\n%{http_code} %{size_upload}"]
                               + list(args), input=data, capture_output=True)
            body, _, tail = r.stdout.rpartition(b"\\n")
            status, uploaded = tail.decode().split()
            return int(status), body, r.stderr.decode().lower(), int(float(uploaded))
        def hooks():
            return [json.loads(line) for line in open(LOG)]
        s3 = boto3.client("s3", endpoint_url=ENDPOINT, region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y",
                          config=Config(signature_version="s3v4", retries={"max_attempts": 1}))
        def code(fn):
            try:
                fn()
            except botocore.exceptions.ClientError as e:
                return e.response["ResponseMetadata"]["HTTPStatusCode"]
            return None

        """

    static func start(hookLog: String, dir: TempDir, timeout: String = "1s") throws -> (ChildProcess, BlobdProcess, Int) {
        let portFile = dir.path + "/hook-port"
        let hook = ChildProcess()
        hook.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        hook.arguments = ["-c", handler, portFile, hookLog]
        try hook.run()
        #expect(eventually(within: 10) { ((try? String(contentsOfFile: portFile, encoding: .utf8)) ?? "").count > 1 })
        let port = try String(contentsOfFile: portFile, encoding: .utf8)
        let blobd = try BlobdProcess(["--hook-url", "http://127.0.0.1:\(port)/hooks", "--hook-timeout", timeout,
                                      "--s3-listen", "127.0.0.1:0"])
        return (hook, blobd, try #require(blobd.s3Port))
    }

    static func python(_ script: String, _ blobd: BlobdProcess, s3Port: Int, log: String) throws {
        let result = try run("/usr/bin/env", ["V1=\(blobd.baseURL)", "ENDPOINT=http://127.0.0.1:\(s3Port)", "LOG=\(log)",
                                              "python3", "-c", client + script], timeout: 240)
        #expect(result.status == 0, "\(result.stderr)\n\(String(decoding: result.stdout, as: UTF8.self))")
    }

    @Test func aTusdHandlerRejectsChangesAndTimesOutInEveryDialect() throws {
        let dir = TempDir()
        let log = dir.path + "/hooks.jsonl"
        let (hook, blobd, s3Port) = try Self.start(hookLog: log, dir: dir)
        defer { hook.stop() }
        try Self.python("""
            # tus: a creation the handler rejects by its metadata stores nothing.
            tus = tusclient.client.TusClient(V1 + "/v1/uploads")
            bad = tus.uploader(file_stream=__import__("io").BytesIO(b"MZ" * 1000), chunk_size=1 << 20,
                               metadata={"filename": "virus.exe", "key": "files/virus.exe"})
            try:
                bad.upload()
                check(False, "a rejected tus creation must fail")
            except tusclient.exceptions.TusCommunicationError as e:
                check(e.status_code == 403, "tus rejection status: %r" % e.status_code)
            check(curl(V1 + "/v1/blobs/files/virus.exe")[0] == 404, "nothing stored for a rejected tus upload")
            # tus: metadata changed at pre-create; pre-finish sees the upload id and its size.
            good = tus.uploader(file_stream=__import__("io").BytesIO(b"hello hooks"), chunk_size=4,
                                metadata={"filename": "ok.txt", "key": "files/ok.txt", "project": "rename"})
            good.upload()
            status, body, headers, _ = curl(V1 + "/v1/blobs/files/ok.txt")
            check(status == 200 and body == b"hello hooks", "the tus blob: %d %r" % (status, body))
            check("content-type: text/x-checked" in headers, "the hook's filetype is the blob's type: " + headers)
            seen = hooks()
            check([h["Type"] for h in seen] == ["pre-create", "pre-create", "pre-finish"], "hook order: %r" % [h["Type"] for h in seen])
            create, finish = seen[1]["Event"], seen[2]["Event"]
            check(create["Upload"]["ID"] == "" and create["Upload"]["Size"] == 11 and create["HTTPRequest"]["Method"] == "POST",
                  "pre-create request: %r" % create)
            check(create["HTTPRequest"]["Header"]["Tus-Resumable"] == ["1.0.0"], "headers as tusd sends them: %r" % create["HTTPRequest"])
            check(finish["Upload"]["ID"] and finish["Upload"]["Offset"] == 11 and finish["Upload"]["MetaData"]["checked"] == "yes",
                  "pre-finish request: %r" % finish)
            # /v1 PUT: a rejected body is never read, nothing stored.
            big = b"x" * (8 << 20)
            status, body, headers, uploaded = curl("-X", "PUT", "--data-binary", "@-", V1 + "/v1/blobs/files/tool.exe", data=big)
            check(status == 403 and json.loads(body) == {"message": "no executables"}, "PUT rejection: %d %r" % (status, body))
            check(uploaded < len(big), "the rejected body was not read (%d of %d bytes sent)" % (uploaded, len(big)))
            check(curl(V1 + "/v1/blobs/files/tool.exe")[0] == 404, "nothing stored for a rejected PUT")
            # /v1 PUT: metadata changed, the pre-finish header added.
            status, body, headers, _ = curl("-X", "PUT", "-H", "Blob-Meta-Project: rename", "--data-binary", "@-",
                                            V1 + "/v1/blobs/files/fine.txt", data=b"fine")
            check(status == 201 and "x-hook: finished" in headers, "PUT with hooks: %d %s" % (status, headers))
            status, body, headers, _ = curl(V1 + "/v1/blobs/files/fine.txt")
            check("content-type: text/x-checked" in headers and "blob-meta-checked: yes" in headers
                  and "blob-meta-project" not in headers, "the hook's metadata: " + headers)
            # /v1 PUT: rejected at pre-finish, after the bytes arrived: nothing stored.
            status, body, headers, _ = curl("-X", "PUT", "--data-binary", "@-", V1 + "/v1/blobs/files/late-reject.txt", data=b"late")
            check(status == 422 and body == b"too late", "pre-finish rejection: %d %r" % (status, body))
            check(curl(V1 + "/v1/blobs/files/late-reject.txt")[0] == 404, "nothing stored after a pre-finish rejection")
            # A hook slower than --hook-timeout: 503, nothing stored.
            status, body, headers, _ = curl("-X", "PUT", "--data-binary", "@-", V1 + "/v1/blobs/files/slow.txt", data=b"slow")
            check(status == 503 and "application/problem+json" in headers, "a slow hook: %d %s" % (status, headers))
            check(curl(V1 + "/v1/blobs/files/slow.txt")[0] == 404, "nothing stored after a hook timeout")
            # S3: PutObject, CreateMultipartUpload and Complete.
            s3.create_bucket(Bucket="s3b")
            check(code(lambda: s3.put_object(Bucket="s3b", Key="virus.exe", Body=b"MZ")) == 403, "PutObject rejected")
            check(code(lambda: s3.create_multipart_upload(Bucket="s3b", Key="virus.exe")) == 403, "CreateMultipartUpload rejected")
            answer = s3.put_object(Bucket="s3b", Key="fine.bin", Body=b"s3 body", Metadata={"project": "rename"})
            check(answer["ResponseMetadata"]["HTTPHeaders"].get("x-hook") == "finished", "PutObject pre-finish header")
            check(s3.head_object(Bucket="s3b", Key="fine.bin")["Metadata"] == {"checked": "yes"}, "S3 metadata changed")
            upload = s3.create_multipart_upload(Bucket="s3b", Key="late-reject.bin")["UploadId"]
            etag = s3.upload_part(Bucket="s3b", Key="late-reject.bin", UploadId=upload, PartNumber=1, Body=b"p" * 100)["ETag"]
            check(code(lambda: s3.complete_multipart_upload(Bucket="s3b", Key="late-reject.bin", UploadId=upload,
                  MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})) == 422, "Complete rejected at pre-finish")
            check(code(lambda: s3.head_object(Bucket="s3b", Key="late-reject.bin")) == 404, "no object after a rejected Complete")
            check(code(lambda: s3.head_object(Bucket="s3b", Key="virus.exe")) == 404, "no object after a rejected PutObject")
            """, blobd, s3Port: s3Port, log: log)
        // The hook gone: 503, nothing stored.
        hook.stop()
        try Self.python("""
            status, body, headers, _ = curl("-X", "PUT", "--data-binary", "@-", V1 + "/v1/blobs/files/after.txt", data=b"x")
            check(status == 503, "no hook to ask: %d %r" % (status, body))
            check(curl(V1 + "/v1/blobs/files/after.txt")[0] == 404, "nothing stored without the hook")
            """, blobd, s3Port: s3Port, log: log)
    }

    @Test func hookSettingsAreChecked() throws {
        for (arguments, message) in [(["--hook-url", "https://127.0.0.1:1/"], "https"),
                                     (["--hook-url", "http://127.0.0.1:1/", "--hook-events", "post-finish"], "pre-create"),
                                     (["--hook-timeout", "5s"], "need --hook-url"),
                                     (["--hook-url", "http://127.0.0.1:1/", "--hook-timeout", "0"], "more than 0")] {
            let result = try run(blobdExecutable(), ["check-config"] + arguments)
            #expect(result.status != 0 && result.stderr.contains(message), "\(arguments): \(result.stderr)")
        }
    }
}

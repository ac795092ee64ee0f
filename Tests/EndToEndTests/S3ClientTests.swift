import Foundation
import LiveBlobd
import Testing

/// Real S3 clients against blobd: boto3 through nginx's TLS, restic, rclone, s3cmd, aws-cli, and both dialects over one store.
@Suite struct S3ClientTests {
    /// boto3's default over https, through nginx set up from deploy/nginx/blobd-s3.conf: every
    /// body comes aws-chunked with a CRC-32 trailer (STREAMING-UNSIGNED-PAYLOAD-TRAILER), and
    /// the SigV4 host includes the front's port.
    @Test func boto3OverTLSThroughNginx() throws {
        let (blobd, port, dir) = try S3Tests.start()
        let front = try NginxFront(deployFile: "blobd-s3.conf", upstreamPort: port)
        defer { front.stop() }
        let big = dir.file("big", testBytes(12 * 1024 * 1024, seed: 7))
        let result = try run("/usr/bin/env", [
            "ENDPOINT=https://127.0.0.1:\(front.port)", "KEY=\(S3Tests.accessKey)", "SECRET=\(S3Tests.secret)", "CA=\(front.certificate)",
            "python3", "-c", """
            import os, sys, hashlib, base64, zlib, boto3
            from botocore.config import Config
            s3 = boto3.client("s3", endpoint_url=os.environ["ENDPOINT"], region_name="us-east-1", verify=os.environ["CA"],
                              aws_access_key_id=os.environ["KEY"], aws_secret_access_key=os.environ["SECRET"],
                              config=Config(retries={"max_attempts": 1}))
            modes = []
            s3.meta.events.register("before-send.s3.*", lambda request, **kw: modes.append(request.headers.get("x-amz-content-sha256", b"")))
            def check(condition, what):
                if not condition: sys.exit("FAILED: " + what)
            s3.create_bucket(Bucket="tls")
            body = os.urandom(3 * 1024 * 1024 + 17)
            del modes[:]
            put = s3.put_object(Bucket="tls", Key="a b/c", Body=body)
            check(modes == [b"STREAMING-UNSIGNED-PAYLOAD-TRAILER"], "boto3 sent aws-chunked with a trailer: %r" % modes)
            check(put["ETag"] == '"%s"' % hashlib.md5(body).hexdigest(), "the ETag is the MD5")
            check(put["ChecksumCRC32"] == base64.b64encode(zlib.crc32(body).to_bytes(4, "big")).decode(), "the trailer's CRC-32")
            got = s3.get_object(Bucket="tls", Key="a b/c")
            check(got["Body"].read() == body, "bytes back over https")
            data = open(sys.argv[1], "rb").read()
            del modes[:]
            s3.upload_file(sys.argv[1], "tls", "big")
            check(b"STREAMING-UNSIGNED-PAYLOAD-TRAILER" in modes, "parts too: %r" % modes)
            check(s3.get_object(Bucket="tls", Key="big")["Body"].read() == data, "a multipart upload over https")
            check(s3.get_object(Bucket="tls", Key="big", Range="bytes=100-199")["Body"].read() == data[100:200], "a range over https")
            """, big,
        ], timeout: 300)
        #expect(result.status == 0, "\(result.stderr)\n\(String(decoding: result.stdout, as: UTF8.self))")
        // And what boto3 stored is exactly the bytes, read through /v1.
        let v1 = try curl(["-H", "Authorization: Bearer bearer-token", blobd.baseURL + "/v1/blobs/tls/big"])
        #expect(sha256Hex(v1.body) == sha256Hex(testBytes(12 * 1024 * 1024, seed: 7)))
    }

    /// restic (through minio-go, which signs every chunk): init, backup, check --read-data,
    /// restore byte for byte, forget --prune.
    @Test func restic() throws {
        let (blobd, port, dir) = try S3Tests.start()
        let source = dir.path + "/source"
        try FileManager.default.createDirectory(atPath: source + "/sub", withIntermediateDirectories: true)
        let files = ["a.bin": testBytes(3_000_000, seed: 71), "sub/b.txt": Array("hello\n".utf8), "big.bin": testBytes(20_000_000, seed: 72)]
        for (name, bytes) in files { _ = dir.file("source/" + name, bytes) }
        let environment = ["AWS_ACCESS_KEY_ID=\(S3Tests.accessKey)", "AWS_SECRET_ACCESS_KEY=\(S3Tests.secret)", "RESTIC_PASSWORD=test-password",
                           "RESTIC_REPOSITORY=s3:http://127.0.0.1:\(port)/restic", "RESTIC_CACHE_DIR=\(dir.path)/cache"]
        func restic(_ arguments: [String]) throws -> (status: Int32, output: String) {
            let result = try run("/usr/bin/env", environment + ["restic"] + arguments, timeout: 300)
            return (result.status, String(decoding: result.stdout, as: UTF8.self) + result.stderr)
        }
        for step in [["init"], ["backup", source], ["backup", source], ["check", "--read-data"],
                     ["restore", "latest", "--target", dir.path + "/restored"], ["forget", "--keep-last", "1", "--prune"],
                     ["check", "--read-data"]] {
            let result = try restic(step)
            #expect(result.status == 0, "restic \(step.joined(separator: " ")): \(result.output)")
        }
        for (name, bytes) in files {
            let restored = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir.path + "/restored" + source + "/" + name)))
            #expect(sha256Hex(restored) == sha256Hex(bytes), "\(name) restored byte for byte")
        }
        #expect(try restic(["snapshots", "--json"]).output.components(separatedBy: "\"short_id\"").count == 2, "one snapshot left")
        _ = blobd
    }

    /// rclone with provider Other: copy, sync after an mtime change (rclone updates it with a
    /// self-copy and REPLACE), check (MD5 ETags against local MD5s), lsf, copy back, delete.
    @Test func rclone() throws {
        let (blobd, port, dir) = try S3Tests.start()
        let files = ["a.bin": testBytes(3_000_000, seed: 81), "sub/b &é.txt": Array("hi\n".utf8)]
        try FileManager.default.createDirectory(atPath: dir.path + "/src/sub", withIntermediateDirectories: true)
        for (name, bytes) in files { _ = dir.file("src/" + name, bytes) }
        // The machine's AWS_CA_BUNDLE would make rclone's AWS SDK try to load a CA bundle for plain http.
        let environment = ["-u", "AWS_CA_BUNDLE", "RCLONE_CONFIG_B_TYPE=s3", "RCLONE_CONFIG_B_PROVIDER=Other",
                           "RCLONE_CONFIG_B_ACCESS_KEY_ID=\(S3Tests.accessKey)", "RCLONE_CONFIG_B_SECRET_ACCESS_KEY=\(S3Tests.secret)",
                           "RCLONE_CONFIG_B_ENDPOINT=http://127.0.0.1:\(port)", "RCLONE_CONFIG_B_REGION=us-east-1"]
        func rclone(_ arguments: [String]) throws -> (status: Int32, output: String) {
            let result = try run("/usr/bin/env", environment + ["rclone", "--config", "/dev/null"] + arguments, timeout: 120)
            return (result.status, String(decoding: result.stdout, as: UTF8.self) + result.stderr)
        }
        #expect(try rclone(["mkdir", "b:rclone"]).status == 0)
        let copied = try rclone(["copy", dir.path + "/src", "b:rclone/data"])
        #expect(copied.status == 0, "\(copied.output)")
        var later = [timeval(tv_sec: time(nil) + 3600, tv_usec: 0), timeval(tv_sec: time(nil) + 3600, tv_usec: 0)]
        #expect(utimes(dir.path + "/src/a.bin", &later) == 0)
        let synced = try rclone(["sync", dir.path + "/src", "b:rclone/data"])
        #expect(synced.status == 0, "\(synced.output)")
        let checked = try rclone(["check", dir.path + "/src", "b:rclone/data"])
        #expect(checked.status == 0 && checked.output.contains("0 differences found"), "\(checked.output)")
        let listed = try rclone(["lsf", "-R", "b:rclone"])
        #expect(Set(listed.output.split(separator: "\n").map(String.init)) == ["data/", "data/a.bin", "data/sub/", "data/sub/b &é.txt"])
        #expect(try rclone(["copy", "b:rclone/data", dir.path + "/back"]).status == 0)
        for (name, bytes) in files {
            let back = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir.path + "/back/" + name)))
            #expect(sha256Hex(back) == sha256Hex(bytes), "\(name) back byte for byte")
        }
        #expect(try rclone(["delete", "b:rclone/data"]).status == 0)
        #expect(try rclone(["lsf", "-R", "b:rclone"]).output.isEmpty)
        _ = blobd
    }

    /// s3cmd: mb, put (a small file and a 20 MiB one, which s3cmd sends in parts), ls, get, del.
    @Test func s3cmd() throws {
        let (blobd, port, dir) = try S3Tests.start()
        let small = testBytes(3_000_000, seed: 101), large = testBytes(20 * 1024 * 1024, seed: 102)
        let options = ["--config=/dev/null", "--access_key=\(S3Tests.accessKey)", "--secret_key=\(S3Tests.secret)",
                       "--host=127.0.0.1:\(port)", "--host-bucket=127.0.0.1:\(port)", "--no-ssl", "--region=us-east-1"]
        func s3cmd(_ arguments: [String]) throws -> (status: Int32, output: String) {
            let result = try run("/usr/bin/env", ["s3cmd"] + options + arguments, timeout: 120)
            return (result.status, String(decoding: result.stdout, as: UTF8.self) + result.stderr)
        }
        #expect(try s3cmd(["mb", "s3://cmd"]).status == 0)
        for (name, bytes) in [("dir/small.bin", small), ("large.bin", large)] {
            let put = try s3cmd(["put", dir.file(name.replacingOccurrences(of: "/", with: "-"), bytes), "s3://cmd/" + name])
            #expect(put.status == 0, "\(put.output)")
        }
        let listed = try s3cmd(["ls", "--recursive", "s3://cmd"])
        #expect(listed.output.contains("s3://cmd/dir/small.bin") && listed.output.contains("s3://cmd/large.bin"), "\(listed.output)")
        for (name, bytes) in [("dir/small.bin", small), ("large.bin", large)] {
            let target = dir.path + "/back-" + name.replacingOccurrences(of: "/", with: "-")
            #expect(try s3cmd(["get", "--force", "s3://cmd/" + name, target]).status == 0)
            let back = try [UInt8](Data(contentsOf: URL(fileURLWithPath: target)))
            #expect(sha256Hex(back) == sha256Hex(bytes), "\(name) back byte for byte")
        }
        #expect(try s3cmd(["del", "s3://cmd/dir/small.bin", "s3://cmd/large.bin"]).status == 0)
        #expect(try s3cmd(["rb", "s3://cmd"]).status == 0)
        _ = blobd
    }

    /// aws-cli's high-level commands (files below its 8 MiB multipart threshold).
    @Test func awsCLI() throws {
        let (blobd, port, dir) = try S3Tests.start()
        let endpoint = "http://127.0.0.1:\(port)"
        let environment = ["AWS_ACCESS_KEY_ID=\(S3Tests.accessKey)", "AWS_SECRET_ACCESS_KEY=\(S3Tests.secret)",
                           "AWS_DEFAULT_REGION=us-east-1", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null"]
        func aws(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
            let result = try run("/usr/bin/env", environment + ["aws", "--endpoint-url", endpoint] + arguments, timeout: 120)
            return (result.status, String(decoding: result.stdout, as: UTF8.self), result.stderr)
        }
        let small = testBytes(2048, seed: 61), medium = testBytes(5 * 1024 * 1024, seed: 62), large = testBytes(20 * 1024 * 1024, seed: 63)
        try FileManager.default.createDirectory(atPath: dir.path + "/tree/sub", withIntermediateDirectories: true)
        _ = dir.file("tree/small.bin", small)
        _ = dir.file("tree/sub/&+-é\" %.bin", medium)
        _ = dir.file("tree/large.bin", large)
        #expect(try aws(["s3", "mb", "s3://cli"]).status == 0)
        let copied = try aws(["s3", "cp", dir.path + "/tree/small.bin", "s3://cli/one/small.bin"])
        #expect(copied.status == 0, "\(copied.stderr)")
        let synced = try aws(["s3", "sync", dir.path + "/tree", "s3://cli/tree"])
        #expect(synced.status == 0, "\(synced.stderr)")
        let listing = try aws(["s3", "ls", "--recursive", "s3://cli/"])
        #expect(listing.status == 0)
        for name in ["one/small.bin", "tree/small.bin", "tree/sub/&+-é\" %.bin"] {
            #expect(listing.stdout.contains(name), "\(name) in \(listing.stdout)")
        }
        #expect(try aws(["s3", "cp", "s3://cli/tree/sub/&+-é\" %.bin", dir.path + "/back.bin"]).status == 0)
        let back = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir.path + "/back.bin")))
        #expect(sha256Hex(back) == sha256Hex(medium))
        #expect(try aws(["s3", "cp", "s3://cli/tree/large.bin", dir.path + "/large-back.bin"]).status == 0)
        let largeBack = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir.path + "/large-back.bin")))
        #expect(sha256Hex(largeBack) == sha256Hex(large), "20 MiB, uploaded by aws-cli in parts")
        let head = try aws(["s3api", "head-object", "--bucket", "cli", "--key", "one/small.bin"])
        #expect(head.stdout.contains("\"ContentLength\": 2048"))
        #expect(try aws(["s3", "sync", dir.path + "/tree", "s3://cli/tree"]).stdout.isEmpty, "a second sync has nothing to do")
        #expect(try aws(["s3", "rm", "--recursive", "s3://cli/"]).status == 0)
        #expect(try aws(["s3", "rb", "s3://cli"]).status == 0)
        #expect(try aws(["s3", "ls"]).stdout.isEmpty)
    }

    /// One store, two dialects: what one writes, the other reads, byte for byte.
    @Test func bothDialectsShareOneStore() throws {
        let (blobd, port, _) = try S3Tests.start()
        let v1 = blobd.baseURL + "/v1/blobs/"
        let bearer = ["-H", "Authorization: Bearer bearer-token"]
        try S3Tests.python(S3Tests.client + """
            s3.create_bucket(Bucket="shared")
            body = os.urandom(300000)
            s3.put_object(Bucket="shared", Key="from-s3.bin", Body=body, ContentType="image/png")
            open(sys.argv[1], "wb").write(body)
            """, port: port, blobd: blobd, arguments: [TempDir().path + "-body"])
        let fromS3 = try curl(bearer + [v1 + "shared/from-s3.bin"])
        #expect(fromS3.status == 200)
        #expect(fromS3.header("Content-Type") == "image/png")
        #expect(fromS3.header("Repr-Digest") == "sha-256=:\(Data(sha256(fromS3.body)).base64EncodedString()):")
        let ranged = try curl(bearer + ["-r", "100-199", v1 + "shared/from-s3.bin"])
        #expect(ranged.status == 206)
        #expect(ranged.body == Array(fromS3.body.dropFirst(100).prefix(100)))

        let written = testBytes(123_457, seed: 63)
        let dir = TempDir()
        #expect(try curl(bearer + ["-T", dir.file("b", written), v1 + "shared/from-v1.bin"]).status == 201)
        try S3Tests.python(S3Tests.client + """
            want = hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest()
            got = s3.get_object(Bucket="shared", Key="from-v1.bin")["Body"].read()
            check(hashlib.sha256(got).hexdigest() == want, "the /v1 upload read through S3")
            etag = s3.head_object(Bucket="shared", Key="from-v1.bin")["ETag"]
            check(etag == '"%s"' % want, "a /v1 blob's S3 ETag is its SHA-256, which no client takes for an MD5: %r" % etag)
            keys = [c["Key"] for c in s3.list_objects_v2(Bucket="shared")["Contents"]]
            check(keys == ["from-s3.bin", "from-v1.bin"], "both in the listing: %r" % keys)
            """, port: port, blobd: blobd, arguments: [dir.path + "/b"])
        #expect(eventually(within: 3) { blobd.stderr.contains("blob.key=shared/from-v1.bin client.address=") && blobd.stderr.contains("http.route=s3") },
                "S3 requests are in the access log")
    }
}

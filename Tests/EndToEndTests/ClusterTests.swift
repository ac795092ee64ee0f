import Foundation
import LiveBlobd
import Testing

/// Several blobd nodes on one PostgreSQL index and one shared data directory: a real
/// PostgreSQL 15 (`PostgresServer`) and real blobd processes, driven by Python's http.client
/// over keep-alive connections to both nodes.
@Suite(.serialized, .enabled(if: PostgresServer.isInstalled, "PostgreSQL 15 is installed by make deps"))
struct ClusterTests {
    /// A database and two nodes, `a` and `b`, on one data directory (by default a local
    /// folder; on CephFS, each node's own ceph-fuse mount of it).
    struct Cluster {
        let postgres: PostgresServer
        let shared = TempDir("blobd-shared")
        var nodes: [BlobdProcess] = []
        /// Each node's view of the shared data directory.
        let dataDirs: [String]
        var dataDir: String { dataDirs[0] }
        let extra: [String]

        init(nodes names: [String] = ["a", "b"], postgres: PostgresServer? = nil, dataDirs: [String]? = nil, extra: [String] = []) throws {
            self.postgres = try postgres ?? PostgresServer()
            let local = shared.path + "/data"
            self.dataDirs = dataDirs ?? names.map { _ in local }
            self.extra = extra
            for (index, name) in names.enumerated() { nodes.append(try start(name, on: index)) }
        }

        func start(_ name: String, on index: Int) throws -> BlobdProcess {
            try BlobdProcess(["--index", postgres.url, "--node-id", name] + extra, dataDir: dataDirs[index])
        }
    }

    /// Runs a Python script with `A` and `B` (the nodes' base URLs) in its environment; it
    /// asserts itself and exits non-zero (with the reason) on any difference.
    static func python(_ script: String, _ cluster: Cluster, arguments: [String] = [], timeout: Double = 300) throws {
        let result = try run("/usr/bin/env", ["A=\(cluster.nodes[0].baseURL)", "B=\(cluster.nodes[1].baseURL)", "python3", "-c",
                                              prelude + script] + arguments, timeout: timeout)
        #expect(result.status == 0, "\(result.stderr)\n\(String(decoding: result.stdout, as: UTF8.self))")
    }

    static let prelude = """
        import os, sys, json, hashlib, threading, http.client, urllib.parse
        def connect(base):
            return http.client.HTTPConnection(urllib.parse.urlparse(base).netloc, timeout=60)
        A, B = connect(os.environ["A"]), connect(os.environ["B"])
        def request(conn, method, path, body=None, headers={}):
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        def check(condition, what):
            if not condition:
                sys.exit("FAILED: " + what)

        """

    /// What one node acknowledges, the other serves at once: 1,000 PUTs on A, each read
    /// byte-exact from B right after its 201; then both list the same keys.
    @Test func readAfterWriteAcrossNodes() throws {
        try Self.readAfterWrite(try Cluster(), count: 1000)
    }

    static func readAfterWrite(_ cluster: Cluster, count: Int) throws {
        try python("""
            count = int(sys.argv[1])
            for i in range(count):
                body = hashlib.sha256(b"%d" % i).digest() * (1 + i % 50)
                status, headers, _ = request(A, "PUT", "/v1/blobs/raw/k%04d" % i, body)
                check(status == 201, "PUT %d on A: %d" % (i, status))
                status, got_headers, got = request(B, "GET", "/v1/blobs/raw/k%04d" % i)
                check(status == 200 and got == body, "GET %d on B right after: %d" % (i, status))
                check(got_headers["ETag"] == headers["ETag"], "the same version on both nodes")
            # Overwrite on B, read on A.
            status, _, _ = request(B, "PUT", "/v1/blobs/raw/k0000", b"new")
            check(status == 200, "overwrite on B: %d" % status)
            check(request(A, "GET", "/v1/blobs/raw/k0000")[2] == b"new", "A sees B's overwrite")
            def listing(conn):
                keys, cursor = [], ""
                while True:
                    status, _, body = request(conn, "GET", "/v1/blobs?prefix=raw/&limit=300" + cursor)
                    check(status == 200, "list: %d" % status)
                    page = json.loads(body)
                    keys += [item["key"] for item in page["blobs"]]
                    if not page.get("next"): return keys
                    cursor = "&after=" + urllib.parse.quote(page["next"])
            on_a, on_b = listing(A), listing(B)
            check(on_a == on_b and len(on_a) == count and on_a == sorted(on_a), "both nodes list the same keys in order")
            # Deleted on A: gone on B at once.
            check(request(A, "DELETE", "/v1/blobs/raw/k0001")[0] == 204, "delete on A")
            check(request(B, "GET", "/v1/blobs/raw/k0001")[0] == 404, "gone on B")
            # A large blob from B, read on A whole (sendfile), by one range and by two.
            big = os.urandom(20 * 1024 * 1024 + 3)
            check(request(B, "PUT", "/v1/blobs/raw/big", big)[0] == 201, "large PUT on B")
            check(request(A, "GET", "/v1/blobs/raw/big")[2] == big, "large GET on A")
            status, _, part = request(A, "GET", "/v1/blobs/raw/big", None, {"Range": "bytes=1000-1999999"})
            check(status == 206 and part == big[1000:2000000], "a range on A")
            status, headers, parts = request(A, "GET", "/v1/blobs/raw/big", None, {"Range": "bytes=0-9,-10"})
            check(status == 206 and big[:10] in parts and big[-10:] in parts, "two ranges on A")
            """, cluster, arguments: [String(count)])
    }

    /// Concurrent reads on a node share round trips to PostgreSQL (`ReadBatch`), and still every
    /// read sees each write acknowledged before it began: 8 readers on B race 300 overwrites on A,
    /// and read each other's keys in between, so that batches mix keys.
    @Test func concurrentReadsSeeEveryAcknowledgedWrite() throws {
        try Self.python("""
            status, _, _ = request(A, "PUT", "/v1/blobs/race/counter", b"0")
            check(status == 201, "first PUT: %d" % status)
            for t in range(8):
                check(request(A, "PUT", "/v1/blobs/race/own%d" % t, b"reader %d" % t)[0] == 201, "PUT own%d" % t)
            acknowledged, done, failures, reads = [0], [False], [], [0]
            def reader(t):
                conn = connect(os.environ["B"])
                while not done[0] and not failures:
                    floor = acknowledged[0]
                    status, _, body = request(conn, "GET", "/v1/blobs/race/counter")
                    if status != 200 or int(body) < floor:
                        failures.append("reader %d: %d %r after %d was acknowledged" % (t, status, body, floor))
                    status, _, body = request(conn, "GET", "/v1/blobs/race/own%d" % ((t + reads[0]) % 8))
                    if status != 200 or not body.startswith(b"reader "):
                        failures.append("reader %d: own key: %d %r" % (t, status, body))
                    reads[0] += 2
            threads = [threading.Thread(target=reader, args=(t,)) for t in range(8)]
            for thread in threads: thread.start()
            for i in range(1, 301):
                status, _, _ = request(A, "PUT", "/v1/blobs/race/counter", b"%d" % i)
                if status != 200:
                    failures.append("PUT %d on A: %d" % (i, status))
                    break
                acknowledged[0] = i
            done[0] = True
            for thread in threads: thread.join()
            check(not failures, "; ".join(failures[:5]))
            check(reads[0] >= 600, "readers made %d reads" % reads[0])
            """, try Cluster())
    }

    /// Conditional writes are decided in PostgreSQL: of 16 concurrent create-only PUTs spread
    /// over two nodes exactly one wins, and of 16 If-Match PUTs on one version exactly one.
    @Test func conditionalWritesHaveOneWinnerAcrossNodes() throws {
        try Self.oneWinner(try Cluster())
    }

    static func oneWinner(_ cluster: Cluster) throws {
        try python("""
            def race(path, headers, expected_loser):
                results, barrier = [], threading.Barrier(16)
                def one(i):
                    conn = connect(os.environ["A" if i % 2 else "B"])
                    barrier.wait()
                    status, response_headers, _ = request(conn, "PUT", path, b"writer %d" % i, headers)
                    results.append((status, i, response_headers.get("ETag")))
                threads = [threading.Thread(target=one, args=(i,)) for i in range(16)]
                for t in threads: t.start()
                for t in threads: t.join()
                winners = [r for r in results if r[0] in (200, 201)]
                check(len(winners) == 1, "exactly one winner: %r" % results)
                check(sorted(r[0] for r in results if r not in winners) == [expected_loser] * 15, "the others: %r" % results)
                return winners[0]
            status, winner, etag = race("/v1/blobs/race/once", {"If-None-Match": "*"}, 412)
            for conn in (A, B):
                check(request(conn, "GET", "/v1/blobs/race/once")[2] == b"writer %d" % winner, "both nodes serve the winner")
            status, winner, _ = race("/v1/blobs/race/once", {"If-Match": etag}, 412)
            check(request(B, "GET", "/v1/blobs/race/once")[2] == b"writer %d" % winner, "the If-Match winner")
            """, cluster)
    }

    /// A tus upload created on A, patched on B and finished on A; two PATCHes of one upload at
    /// once on two nodes: one proceeds, the other is refused with problem+json.
    @Test func tusUploadsContinueOnAnyNode() throws {
        try Self.tusAcrossNodes(try Cluster())
    }

    static func tusAcrossNodes(_ cluster: Cluster) throws {
        try python("""
            tus = {"Tus-Resumable": "1.0.0"}
            data = os.urandom(3 * 1024 * 1024)
            status, headers, _ = request(A, "POST", "/v1/uploads", None, dict(tus, **{"Upload-Length": str(len(data))}))
            check(status == 201, "created on A: %d" % status)
            path = urllib.parse.urlparse(headers["Location"]).path
            patch = lambda conn, offset, chunk: request(conn, "PATCH", path, chunk, dict(tus, **{
                "Upload-Offset": str(offset), "Content-Type": "application/offset+octet-stream"}))
            check(patch(A, 0, data[:1000000])[0] == 204, "first part on A")
            status, headers, _ = request(B, "HEAD", path, None, tus)
            check(headers.get("Upload-Offset") == "1000000", "B sees A's offset: %r" % headers)
            check(patch(B, 1000000, data[1000000:2000000])[0] == 204, "second part on B")
            status, headers, _ = patch(A, 2000000, data[2000000:])
            check(status == 204 and headers.get("Upload-Offset") == str(len(data)), "finished on A")
            blob = headers.get("Location") or ""
            digest = hashlib.sha256(data).hexdigest()
            status, _, got = request(B, "GET", "/v1/blobs/" + digest)
            check(status == 200 and got == data, "the blob on B: %d" % status)

            # Two PATCHes at once, one per node: a slow one holds the upload.
            status, headers, _ = request(A, "POST", "/v1/uploads", None, dict(tus, **{"Upload-Length": str(len(data))}))
            path = urllib.parse.urlparse(headers["Location"]).path
            import socket, time
            node_a = urllib.parse.urlparse(os.environ["A"])
            slow = socket.create_connection((node_a.hostname, node_a.port))
            slow.sendall(("PATCH %s HTTP/1.1\\r\\nHost: a\\r\\nTus-Resumable: 1.0.0\\r\\nUpload-Offset: 0\\r\\n"
                          "Content-Type: application/offset+octet-stream\\r\\nContent-Length: 2000\\r\\n\\r\\n" % path).encode() + b"x" * 1000)
            time.sleep(0.5)
            status, headers, body = patch(B, 0, b"y" * 2000)
            check(status in (409, 423) and headers.get("Content-Type", "").startswith("application/problem+json"),
                  "the second PATCH is refused: %d %r" % (status, body))
            slow.sendall(b"x" * 1000)
            answer = slow.recv(4096)
            check(answer.startswith(b"HTTP/1.1 204"), "the first PATCH completes: %r" % answer[:100])
            slow.close()
            status, headers, _ = request(B, "HEAD", path, None, tus)
            check(headers.get("Upload-Offset") == "2000", "nothing interleaved: %r" % headers)
            check(patch(B, 2000, data[2000:])[0] == 204, "B continues once A is done")
            """, cluster)
    }

    /// A blob deleted (or replaced) through one node can still be downloaded whole through the
    /// other during the grace period; its file goes once the grace period is over.
    @Test func replacedFilesWaitOutTheGracePeriod() throws {
        let cluster = try Cluster(extra: ["--reclaim-grace", "3", "--upload-expiry", "2"])
        let body = testBytes(8 * 1024 * 1024, seed: 5)
        let put = try curl(["-X", "PUT", "--data-binary", "@-", cluster.nodes[0].baseURL + "/v1/blobs/big"], stdin: body)
        #expect(put.status == 201)
        let before = Set(files(under: cluster.dataDir + "/blobs"))
        #expect(before.count == 1)
        // A slow download on B (1 MiB/s), and the blob deleted through A while it runs.
        let download = ChildProcess()
        download.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        let out = cluster.shared.path + "/downloaded"
        download.arguments = ["-s", "--limit-rate", "1M", "-o", out, cluster.nodes[1].baseURL + "/v1/blobs/big"]
        try download.run()
        usleep(500_000)
        #expect(try curl(["-X", "DELETE", cluster.nodes[0].baseURL + "/v1/blobs/big"]).status == 204)
        #expect(try curl([cluster.nodes[1].baseURL + "/v1/blobs/big"]).status == 404, "deleted for everyone at once")
        #expect(Set(files(under: cluster.dataDir + "/blobs")) == before, "the file stays during the grace period")
        download.waitUntilExit()
        let got = [UInt8]((try? Data(contentsOf: URL(fileURLWithPath: out))) ?? Data())
        #expect(sha256Hex(got) == sha256Hex(body), "the download in flight finished whole")
        #expect(eventually(within: 20) { files(under: cluster.dataDir + "/blobs").isEmpty }, "reclaimed after the grace period")
    }

    /// PostgreSQL stopped during traffic on both nodes: requests that need it get 503
    /// problem+json with Retry-After at once, /readyz goes unready; once it is back the nodes
    /// recover by themselves, and every acknowledged blob is there.
    @Test func databaseRestartDuringTraffic() throws {
        let cluster = try Cluster()
        let control = cluster.shared.path + "/stop-writing"
        let acknowledged = cluster.shared.path + "/acknowledged"
        // A writer on both nodes, for at most 90 s or until told to stop; it records every
        // 2xx and checks every other answer is 503 problem+json with Retry-After.
        let writer = ChildProcess()
        writer.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        writer.arguments = ["A=\(cluster.nodes[0].baseURL)", "B=\(cluster.nodes[1].baseURL)", "python3", "-c", Self.prelude + """
            import time
            log, statuses, started, i = open(sys.argv[1], "w"), {}, time.time(), 0
            while not os.path.exists(sys.argv[2]) and time.time() - started < 90:
                i += 1
                conn = connect(os.environ["A" if i % 2 else "B"])
                body = b"%d" % i * 100
                try:
                    status, headers, answer = request(conn, "PUT", "/v1/blobs/traffic/%d" % i, body)
                except Exception as e:
                    sys.exit("FAILED: request %d raised %r" % (i, e))
                statuses[status] = statuses.get(status, 0) + 1
                if status in (200, 201):
                    log.write("%d %s\\n" % (i, hashlib.sha256(body).hexdigest())); log.flush()
                elif status == 503:
                    check(headers.get("Retry-After") and headers.get("Content-Type", "").startswith("application/problem+json"),
                          "503 with Retry-After and problem+json: %r" % headers)
                else:
                    sys.exit("FAILED: PUT %d answered %d %r" % (i, status, answer))
                time.sleep(0.01)
            print(json.dumps(statuses))
            """, acknowledged, control]
        let output = Pipe()
        writer.standardOutput = output
        try writer.run()
        let nodeA = cluster.nodes[0].baseURL
        #expect(eventually(within: 20) { ((try? String(contentsOfFile: acknowledged, encoding: .utf8)) ?? "").count > 200 })
        cluster.postgres.stop()
        let started = Date()
        let refused = try curl(["-X", "PUT", "--data-binary", "x", nodeA + "/v1/blobs/while-down", "-m", "30"])
        #expect(refused.status == 503 && refused.header("Retry-After") != nil, "\(refused.status) \(refused.text)")
        #expect(Date().timeIntervalSince(started) < 10, "503 within a bounded time, not a hang")
        #expect(try curl([nodeA + "/v1/blobs/traffic/1", "-m", "30"]).status == 503, "reads need the index too")
        #expect(try curl([nodeA + "/readyz", "-m", "30"]).status == 503, "/readyz unready")
        sleep(2)
        try cluster.postgres.start()
        #expect(eventually(within: 30) { (try? curl([nodeA + "/readyz"]).status) == 200 }, "ready again without a restart")
        #expect(eventually(within: 30) { (try? curl(["-X", "PUT", "--data-binary", "back", cluster.nodes[1].baseURL + "/v1/blobs/after"]).status) == 201 })
        sleep(2)
        #expect(FileManager.default.createFile(atPath: control, contents: Data()))
        writer.waitUntilExit()
        #expect(writer.terminationStatus == 0)
        let statuses = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(statuses.contains("\"503\""), "the writer saw the outage: \(statuses)")
        // Every acknowledged blob is there, byte for byte, on both nodes.
        try Self.python("""
            lines = open(sys.argv[1]).read().split()
            pairs = list(zip(lines[0::2], lines[1::2]))
            check(len(pairs) > 20, "acknowledged writes: %d" % len(pairs))
            for i, digest in pairs:
                for conn in (A, B):
                    status, _, body = request(conn, "GET", "/v1/blobs/traffic/" + i)
                    check(status == 200 and hashlib.sha256(body).hexdigest() == digest, "acknowledged blob %s: %d" % (i, status))
            """, cluster, arguments: [acknowledged])
    }

    /// kill -9 of a node in mid-upload while the other keeps serving: no acknowledged blob is
    /// lost, no partial one shows, and the restarted node repairs only its own interrupted
    /// writes (the other node's upload in flight meanwhile completes).
    @Test func killedNodeRepairsOnlyItsOwnWrites() throws {
        try Self.killedNode(try Cluster())
    }

    static func killedNode(_ cluster: Cluster) throws {
        var cluster = cluster
        let body = testBytes(6 * 1024 * 1024, seed: 9)
        let bodyFile = cluster.shared.file("body", body)
        for i in 0..<20 {
            #expect(try curl(["-X", "PUT", "--data-binary", "kept \(i)", cluster.nodes[0].baseURL + "/v1/blobs/kept/\(i)"]).status == 201)
        }
        // Loopback socket buffers take the first few MiB at once whatever curl's rate limit, so
        // the upload to be killed is far larger than what can arrive before the kill.
        let doomedFile = cluster.shared.file("doomed", testBytes(48 * 1024 * 1024, seed: 10))
        func slowUpload(_ node: BlobdProcess, _ key: String, rate: String, file: String? = nil) throws -> ChildProcess {
            let upload = ChildProcess()
            upload.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            upload.arguments = ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--limit-rate", rate, "-X", "PUT", "-T", file ?? bodyFile,
                                node.baseURL + "/v1/blobs/" + key]
            upload.standardOutput = Pipe()
            try upload.run()
            return upload
        }
        // An upload to A, killed in mid-body.
        let before = Set(files(under: cluster.dataDir + "/blobs"))
        let doomed = try slowUpload(cluster.nodes[0], "doomed", rate: "2M", file: doomedFile)
        usleep(1_000_000)
        #expect(files(under: cluster.dataDir + "/blobs").count == before.count + 1, "the doomed upload's file is being written")
        cluster.nodes[0].stop(signal: SIGKILL)
        doomed.waitUntilExit()
        // B serves throughout, and has an upload of its own in flight while A restarts.
        #expect(try curl([cluster.nodes[1].baseURL + "/v1/blobs/kept/3"]).text == "kept 3")
        let other = try slowUpload(cluster.nodes[1], "others", rate: "2M")
        usleep(500_000)
        cluster.nodes[0] = try cluster.start("a", on: 0)
        let partial = try curl([cluster.nodes[0].baseURL + "/v1/blobs/doomed"])
        #expect(partial.status == 404, "no partial blob: \(partial.status) \(partial.text.prefix(300))")
        other.waitUntilExit()
        let code = String(decoding: (other.standardOutput as? Pipe)?.fileHandleForReading.readDataToEndOfFile() ?? Data(), as: UTF8.self)
        #expect(code == "201", "B's upload was not A's to repair: \(code)")
        let got = try curl([cluster.nodes[0].baseURL + "/v1/blobs/others"])
        #expect(sha256Hex(got.body) == sha256Hex(body))
        for i in 0..<20 {
            #expect(try curl([cluster.nodes[1].baseURL + "/v1/blobs/kept/\(i)"]).text == "kept \(i)")
        }
        let after = Set(files(under: cluster.dataDir + "/blobs"))
        #expect(before.subtracting(after).isEmpty, "nothing committed was removed")
        #expect(after.subtracting(before).count == 1, "A's interrupted file is gone; B's new one is there")
    }
}

/// The same, on a real distributed file system: each node on its own ceph-fuse mount of one
/// CephFS (tools/ceph-local.sh), so every write crosses the Ceph client cache and the MDS.
@Suite(.serialized, .enabled(if: PostgresServer.isInstalled && CephCluster.isInstalled, "Ceph and PostgreSQL are installed by make deps"))
struct CephClusterTests {
    @Test func twoNodesOnTheirOwnCephFuseMounts() throws {
        let ceph = try CephCluster(mounts: 2)
        let cluster = try ClusterTests.Cluster(dataDirs: ceph.mounts.map { $0 + "/blobd" })
        try ClusterTests.readAfterWrite(cluster, count: 200)
        try ClusterTests.oneWinner(cluster)
        try ClusterTests.tusAcrossNodes(cluster)
        try ClusterTests.killedNode(cluster)
    }
}

/// `blobd migrate-index` and `blobd fsck` on a cluster: real PostgreSQL, real nodes.
@Suite(.serialized, .enabled(if: PostgresServer.isInstalled, "PostgreSQL 15 is installed by make deps"))
struct ClusterToolTests {
    /// A single node's data directory, with blobs, metadata, an S3 bucket and a half-done tus
    /// upload, moved to PostgreSQL: stopped with SIGINT midway, run again, then served by two
    /// nodes with the same bytes, ETags, digests and metadata, and the upload finished there
    /// with its Content-Language; the unfinished uploads keep their owner's places.
    @Test func migrateIndexKeepsEverything() throws {
        let postgres = try PostgresServer()
        let shared = TempDir("blobd-migrate")
        let dataDir = shared.path + "/data"
        let data = testBytes(3 * 1024 * 1024, seed: 3)
        var etags: [String: String] = [:]
        var uploadPath = ""
        var s3ETag = ""
        let summedParts = [testBytes(5 << 20, seed: 11), Array("end".utf8)]
        var summedUpload = "", summedETags: [String] = []
        do {
            let single = try BlobdProcess(["--s3-listen", "127.0.0.1:0"], dataDir: dataDir)
            try run("/usr/bin/env", ["BASE=\(single.baseURL)", "python3", "-c", """
                import os, http.client, urllib.parse
                conn = http.client.HTTPConnection(urllib.parse.urlparse(os.environ["BASE"]).netloc)
                for i in range(3000):
                    conn.request("PUT", "/v1/blobs/many/%04d" % i, body=b"blob %d" % i)
                    response = conn.getresponse(); response.read()
                    assert response.status == 201, response.status
                """])
            let put = try curl(["-X", "PUT", "--data-binary", "kept with metadata", "-H", "Content-Type: text/x-kept",
                                "-H", "Cache-Control: max-age=60", "-H", "Content-Disposition: attachment; filename=\"k.txt\"",
                                "-H", "Content-Language: de, en", single.baseURL + "/v1/blobs/meta"])
            etags["meta"] = put.header("ETag")
            etags["many/0042"] = try curl(["-I", single.baseURL + "/v1/blobs/many/0042"]).header("ETag")
            let created = try curl(["-X", "POST", "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Length: \(data.count)",
                                    "-H", "Upload-Metadata: content-language \(Data("sv".utf8).base64EncodedString())",
                                    single.baseURL + "/v1/uploads"])
            uploadPath = URL(string: created.header("Location") ?? "")?.path ?? ""
            let patched = try curl(["-X", "PATCH", "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Offset: 0",
                                    "-H", "Content-Type: application/offset+octet-stream", "--data-binary", "@-",
                                    single.baseURL + uploadPath], stdin: Array(data[..<1_000_000]))
            #expect(patched.status == 204)
            let s3 = "http://127.0.0.1:\(try #require(single.s3Port))"
            #expect(try curl(["-X", "PUT", s3 + "/bucket"]).status == 200)
            let configuration = "<CreateBucketConfiguration><LocationConstraint>eu-west-1</LocationConstraint></CreateBucketConfiguration>"
            #expect(try curl(["-X", "PUT", "--data-binary", configuration, s3 + "/europe"]).status == 200)
            s3ETag = try curl(["-X", "PUT", "--data-binary", "through s3", s3 + "/bucket/object"]).header("ETag") ?? ""
            // A multipart object, whose part sizes must travel too (GET by part number).
            let initiated = try curl(["-X", "POST", s3 + "/bucket/parts?uploads"]).text
            let uploadID = try #require(initiated.range(of: "(?<=<UploadId>)[^<]+", options: .regularExpression).map { String(initiated[$0]) })
            var completion = "<CompleteMultipartUpload>"
            for (number, body) in [testBytes(5 << 20, seed: 9), Array("tail".utf8)].enumerated() {
                let etag = try curl(["-X", "PUT", "--data-binary", "@-", s3 + "/bucket/parts?partNumber=\(number + 1)&uploadId=\(uploadID)"],
                                    stdin: body).header("ETag") ?? ""
                completion += "<Part><PartNumber>\(number + 1)</PartNumber><ETag>\(etag)</ETag></Part>"
            }
            completion += "</CompleteMultipartUpload>"
            #expect(try curl(["-X", "POST", "--data-binary", completion, s3 + "/bucket/parts?uploadId=\(uploadID)"]).status == 200)
            // An unfinished upload with a checksum algorithm and one part, finished after the move.
            let started = try curl(["-X", "POST", "-H", "x-amz-checksum-algorithm: SHA256", s3 + "/bucket/summed?uploads"]).text
            summedUpload = try #require(started.range(of: "(?<=<UploadId>)[^<]+", options: .regularExpression).map { String(started[$0]) })
            summedETags.append(try curl(["-X", "PUT", "-H", "x-amz-checksum-sha256: \(sha256Base64(summedParts[0]))", "--data-binary", "@-",
                                         s3 + "/bucket/summed?partNumber=1&uploadId=\(summedUpload)"], stdin: summedParts[0]).header("ETag") ?? "")
            #expect(single.stop() == 0)
        }

        // Stopped by SIGINT after its first progress line, then run again.
        let migration = ChildProcess()
        migration.executableURL = URL(fileURLWithPath: blobdExecutable())
        migration.arguments = ["migrate-index", "--data-dir", dataDir, "--to", postgres.url]
        migration.environment = ["BLOBD_PROGRESS_INTERVAL": "0", "BLOBD_TEST_MIGRATION_DELAY": "0.5", "PATH": "/usr/bin:/bin"]
        let errors = Pipe()
        migration.standardError = errors
        migration.standardOutput = FileHandle.nullDevice
        try migration.run()
        var seen = Data()
        while !String(decoding: seen, as: UTF8.self).contains("migrate-index: ") && migration.isRunning {
            seen.append(errors.fileHandleForReading.availableData)
        }
        kill(migration.processIdentifier, SIGINT)
        migration.waitUntilExit()
        #expect(migration.terminationStatus == 130, "stopped cleanly: \(String(decoding: seen, as: UTF8.self))")
        #expect(FileManager.default.fileExists(atPath: dataDir + "/index.sqlite"), "not retired until done")
        let again = try run(blobdExecutable(), ["migrate-index", "--data-dir", dataDir, "--to", postgres.url])
        let summary = String(decoding: again.stdout, as: UTF8.self)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(summary.contains("migrated 3003 blobs"), "\(summary)")
        #expect(!summary.contains("; 3003 new"), "the second run found the first run's work: \(summary)")
        // The two S3 buckets and the one the /v1 writes made theirs (one namespace).
        #expect(summary.contains("3 buckets, 0 bucket settings, 1 tus uploads, 1 multipart uploads, 0 pending events"), "\(summary)")

        // Without --index the directory is refused now.
        let refused = try run(blobdExecutable(), ["--data-dir", dataDir, "--listen", "127.0.0.1:0"], timeout: 30)
        #expect(refused.status != 0 && refused.stderr.contains("--index"), "\(refused.stderr)")

        // Two nodes serve it all. The two unfinished uploads moved with their owner (this
        // address), whose places under --max-open-uploads they still take.
        var cluster = try ClusterTests.Cluster(postgres: postgres, dataDirs: [dataDir, dataDir],
                                               extra: ["--s3-listen", "127.0.0.1:0", "--max-open-uploads", "2"])
        let (a, b) = (cluster.nodes[0], cluster.nodes[1])
        let refusedUpload = try curl(["-X", "POST", "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Length: 1", a.baseURL + "/v1/uploads"])
        #expect(refusedUpload.status == 429, "the moved uploads count toward their owner's limit")
        let meta = try curl([b.baseURL + "/v1/blobs/meta"])
        #expect(meta.text == "kept with metadata" && meta.header("ETag") == etags["meta"])
        #expect(meta.header("Content-Type") == "text/x-kept" && meta.header("Cache-Control") == "max-age=60")
        #expect(meta.header("Content-Disposition") == "attachment; filename=\"k.txt\"" && meta.header("Content-Language") == "de, en")
        #expect(meta.header("Repr-Digest") == "sha-256=:\(sha256Base64(Array("kept with metadata".utf8))):")
        let one = try curl([a.baseURL + "/v1/blobs/many/0042"])
        #expect(one.text == "blob 42" && one.header("ETag") == etags["many/0042"])
        let listed = try curl([a.baseURL + "/v1/blobs?prefix=many/&limit=1000"]).text
        #expect(listed.contains("many/0999") && !listed.contains("many/1000"))
        let head = try curl(["-I", "-H", "Tus-Resumable: 1.0.0", b.baseURL + uploadPath])
        #expect(head.header("Upload-Offset") == "1000000", "the unfinished upload, with its offset")
        let finished = try curl(["-X", "PATCH", "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Offset: 1000000",
                                 "-H", "Content-Type: application/offset+octet-stream", "--data-binary", "@-",
                                 b.baseURL + uploadPath], stdin: Array(data[1_000_000...]))
        #expect(finished.status == 204, "finished on a node, with the saved hash state")
        let whole = try curl([a.baseURL + "/v1/blobs/" + sha256Hex(data)])
        #expect(whole.status == 200 && sha256Hex(whole.body) == sha256Hex(data))
        #expect(whole.header("Content-Language") == "sv", "the upload's attributes moved with it")
        let placeFreed = try curl(["-X", "POST", "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Length: 1", a.baseURL + "/v1/uploads"])
        #expect(placeFreed.status == 201, "finishing the moved upload frees its place")
        let s3 = try curl(["-I", "http://127.0.0.1:\(try #require(b.s3Port))/bucket/object"])
        #expect(s3.status == 200 && s3.header("ETag") == s3ETag, "the S3 object keeps its MD5 ETag")
        let part = try curl(["http://127.0.0.1:\(try #require(a.s3Port))/bucket/parts?partNumber=2"])
        #expect(part.status == 206 && part.text == "tail" && part.header("x-amz-mp-parts-count") == "2"
                && part.header("Content-Range") == "bytes \(5 << 20)-\((5 << 20) + 3)/\((5 << 20) + 4)", "a part by number: \(part.status)")
        // The upload with a checksum goes on on a node: a part (its checksum computed), Complete,
        // and the object's composite SHA-256 from both parts'.
        let europe = try curl(["http://127.0.0.1:\(try #require(b.s3Port))/europe?location"])
        #expect(europe.text.contains(">eu-west-1</LocationConstraint>"), "a bucket keeps its region: \(europe.text)")
        let b3 = "http://127.0.0.1:\(try #require(b.s3Port))/bucket/summed"
        summedETags.append(try curl(["-X", "PUT", "--data-binary", "@-", b3 + "?partNumber=2&uploadId=\(summedUpload)"],
                                    stdin: summedParts[1]).header("ETag") ?? "")
        let list = summedETags.enumerated().map { "<Part><PartNumber>\($0.offset + 1)</PartNumber><ETag>\($0.element)</ETag></Part>" }
        let done = try curl(["-X", "POST", "--data-binary", "<CompleteMultipartUpload>\(list.joined())</CompleteMultipartUpload>",
                             b3 + "?uploadId=\(summedUpload)"])
        let raw = summedParts.flatMap { Array(Data(base64Encoded: sha256Base64($0)) ?? Data()) }
        let composite = sha256Base64(raw) + "-2"
        #expect(done.status == 200 && done.text.contains("<ChecksumSHA256>\(composite)</ChecksumSHA256>"), "\(done.text)")
        let summed = try curl(["-I", "-H", "x-amz-checksum-mode: ENABLED", b3])
        #expect(summed.header("x-amz-checksum-sha256") == composite && summed.header("x-amz-checksum-type") == "COMPOSITE")
        // PostgreSQL keeps the parts' checksums: part 2 answers its own.
        let second = try curl(["-I", "-H", "x-amz-checksum-mode: ENABLED", b3 + "?partNumber=2"])
        #expect(second.status == 206 && second.header("x-amz-checksum-sha256") == sha256Base64(summedParts[1]), "\(second.status)")
        cluster.nodes.removeAll()
    }

    /// fsck on a live cluster: a version in its grace period and a write in flight on a live
    /// node are not unindexed; the leftover of a node that is gone is, and --repair
    /// quarantines it. Progress lines go to stderr.
    @Test func fsckChecksTheSharedIndexBesideLiveNodes() throws {
        let cluster = try ClusterTests.Cluster()
        let (a, b) = (cluster.nodes[0], cluster.nodes[1])
        for i in 0..<50 {
            #expect(try curl(["-X", "PUT", "--data-binary", "v\(i)", a.baseURL + "/v1/blobs/fff/\(i)"]).status == 201)
        }
        #expect(try curl(["-X", "PUT", "--data-binary", "replaced", b.baseURL + "/v1/blobs/fff/1"]).status == 200)
        // A slow upload in flight on B while fsck runs.
        let bodyFile = cluster.shared.file("slow", testBytes(16 * 1024 * 1024, seed: 2))
        let slow = ChildProcess()
        slow.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        slow.arguments = ["-s", "-o", "/dev/null", "--limit-rate", "1M", "-T", bodyFile, b.baseURL + "/v1/blobs/slow"]
        try slow.run()
        defer { slow.waitUntilExit() }
        usleep(700_000)
        let fsck = [blobdExecutable(), "fsck", "--data-dir", cluster.dataDir, "--index", cluster.postgres.url]
        let clean = try run("/usr/bin/env", ["BLOBD_PROGRESS_INTERVAL=0"] + fsck)
        let output = String(decoding: clean.stdout, as: UTF8.self)
        #expect(clean.status == 0, "\(output) \(clean.stderr)")
        #expect(output.contains("checked 50 blobs: 0 corrupt, 0 missing, 0 unindexed"), "\(output)")
        #expect(clean.stderr.contains("fsck: 50/50 blobs"), "progress: \(clean.stderr)")

        // The leftover of node "gone": logged as pending in its folder, never committed.
        let version = "abcdef0123456789abcdef0123456789"
        try FileManager.default.createDirectory(atPath: cluster.dataDir + "/nodes/gone", withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: cluster.dataDir + "/nodes/gone/pending-0", contents: Data("\(version)\n".utf8)))
        #expect(FileManager.default.createFile(atPath: cluster.dataDir + "/blobs/ab/\(version)", contents: Data("partial".utf8)))
        let found = try run(fsck[0], Array(fsck.dropFirst()))
        #expect(found.status == 1)
        #expect(String(decoding: found.stdout, as: UTF8.self).contains("unindexed blobs/ab/\(version)"))
        #expect(try run(fsck[0], Array(fsck.dropFirst()) + ["--repair"]).status == 1)
        #expect(FileManager.default.fileExists(atPath: cluster.dataDir + "/quarantine/\(version)"))
        #expect(try run(fsck[0], Array(fsck.dropFirst())).status == 0)
        #expect(try curl([a.baseURL + "/v1/blobs/fff/1"]).text == "replaced")
    }

    /// PostgreSQL unreachable at start: blobd says so and exits non-zero (an orchestrator
    /// restarts it), without the password. Reachable: the password is in no log line, and
    /// /metrics labels every sample with the node id.
    @Test func startsOnlyWithItsDatabaseAndNeverLogsThePassword() throws {
        let shared = TempDir("blobd-start")
        let closed = try freePort()
        let started = Date()
        let refused = try run(blobdExecutable(), ["--data-dir", shared.path + "/data", "--listen", "127.0.0.1:0", "--node-id", "a",
                                                  "--index", "postgres://blobd:Sup3rSecret@127.0.0.1:\(closed)/blobd"], timeout: 60)
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("cannot reach the PostgreSQL index postgres://blobd:***@127.0.0.1:\(closed)/blobd"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("Sup3rSecret"))
        #expect(Date().timeIntervalSince(started) < 30)

        let postgres = try PostgresServer()
        let url = postgres.url.replacingOccurrences(of: "blobd@", with: "blobd:Sup3rSecret@")
        let node = try BlobdProcess(["--index", url, "--node-id", "node-7"], dataDir: shared.path + "/data")
        #expect(try curl(["-X", "PUT", "--data-binary", "x", node.baseURL + "/v1/blobs/x"]).status == 201)
        let metrics = try curl([node.baseURL + "/metrics"]).text
        #expect(metrics.contains("blobd_build_info{node=\"node-7\",version="), "\(metrics.prefix(400))")
        #expect(metrics.contains("blobd_blobs_stored{node=\"node-7\"} 1"))
        let sessions = String(decoding: try postgres.psql(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'blobd' AND backend_type = 'client backend'").stdout, as: UTF8.self)
        #expect((Int(sessions.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 0, "blobd's pooled sessions, named: \(sessions)")
        #expect(node.stop() == 0)
        #expect(node.stderr.contains("postgres://blobd:***@127.0.0.1"), "the redacted URL is logged")
        #expect(!node.stderr.contains("Sup3rSecret"))
    }
}

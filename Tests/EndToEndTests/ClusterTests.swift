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

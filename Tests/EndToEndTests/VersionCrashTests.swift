import Foundation
import LiveBlobd
import Testing

/// kill -9 during versioned overwrites and deletes (issue 25): after recovery the versions of
/// each key are exactly the acknowledged ones, in order (plus, at most, the one write or delete
/// in flight at the kill, as its newest), each data version whole, and fsck is clean.
@Suite(.serialized) struct VersionCrashTests {
    /// Four keys, each written and deleted in turn by its own thread through /v1, logging
    /// every attempt and every acknowledged answer (with its `Blob-Version`) as it goes.
    static let driver = """
        import hashlib, json, os, random, sys, threading, requests
        V1, log = os.environ["V1"], open(sys.argv[1], "a")
        lock = threading.Lock()
        def note(*entry):
            with lock:
                log.write(json.dumps(entry) + "\\n")
                log.flush()
        def worker(key, seed):
            rnd = random.Random(seed)
            for i in range(2000):
                if i > 0 and rnd.random() < 0.25:
                    note("try", key, "delete", None)
                    call = lambda: requests.delete(V1 + "/v1/blobs/" + key, timeout=10)
                    sha = None
                else:
                    body = os.urandom(rnd.choice([0, 10, 5000, 200000]))
                    sha = hashlib.sha256(body).hexdigest()
                    note("try", key, "put", sha)
                    call = lambda: requests.put(V1 + "/v1/blobs/" + key, data=body, timeout=10)
                try:
                    r = call()
                except Exception:
                    return
                if r.status_code in (200, 201, 204):
                    note("ack", key, "delete" if sha is None else "put", sha, r.headers.get("Blob-Version"))
                elif not (r.status_code == 404 and sha is None):
                    return
        threads = [threading.Thread(target=worker, args=("vbk/k%d" % i, i)) for i in range(4)]
        for t in threads: t.start()
        for t in threads: t.join()
        """

    /// Compares the versions listed after recovery with the log; exits non-zero on any difference.
    static let checker = """
        import hashlib, json, os, sys, requests
        V1 = os.environ["V1"]
        entries = [json.loads(line) for line in open(sys.argv[1]) if line.endswith("\\n")]
        acked, last_try = {}, {}
        for e in entries:
            if e[0] == "ack": acked.setdefault(e[1], []).append(e)
            else: last_try[e[1]] = e
        total = 0
        for key in sorted(last_try):
            listed = json.loads(requests.get(V1 + "/v1/blobs/" + key + "?versions&limit=10000").content)["versions"]
            listed.reverse()  # oldest first, as acknowledged
            want = [e[4] for e in acked.get(key, [])]
            ids = [v["version"] for v in listed]
            if ids[:len(want)] != want:
                sys.exit("FAILED: %s lists %r, acknowledged %r" % (key, ids, want))
            extra = listed[len(want):]
            if len(extra) > 1:
                sys.exit("FAILED: %s has %d versions nobody was told of" % (key, len(extra)))
            if extra:
                t = last_try[key]
                if extra[0]["delete_marker"] != (t[2] == "delete") or (t[2] == "put" and extra[0]["sha256"] != t[3]):
                    sys.exit("FAILED: %s's unacknowledged newest version %r is not the write in flight %r" % (key, extra[0], t))
            for v, e in zip(listed, acked.get(key, [])):
                if v["delete_marker"] != (e[2] == "delete"):
                    sys.exit("FAILED: %s version %s kind" % (key, v["version"]))
                if not v["delete_marker"]:
                    body = requests.get(V1 + "/v1/blobs/" + key + "?version=" + v["version"]).content
                    if hashlib.sha256(body).hexdigest() != e[3]:
                        sys.exit("FAILED: %s version %s is not whole" % (key, v["version"]))
            total += len(want)
        print(total)
        """

    @Test(arguments: [1, 2, 3])
    func killDuringVersionedWritesAndDeletes(_ trial: Int) throws {
        let dir = TempDir()
        let dataDir = dir.path + "/data"
        let log = dir.path + "/log"
        do {
            let blobd = try BlobdProcess(["--s3-listen", "127.0.0.1:0"], dataDir: dataDir)
            let s3 = "http://127.0.0.1:\(try #require(blobd.s3Port))"
            #expect(try curl(["-X", "PUT", s3 + "/vbk"]).status == 200)
            let enable = "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>"
            #expect(try curl(["-X", "PUT", "--data-binary", enable, s3 + "/vbk?versioning"]).status == 200)
            let driver = ChildProcess()
            driver.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            driver.arguments = ["V1=\(blobd.baseURL)", "python3", "-c", Self.driver, log]
            driver.standardError = FileHandle.nullDevice
            try driver.run()
            usleep(UInt32.random(in: 400_000...1_500_000))
            #expect(blobd.stop(signal: SIGKILL) != nil)
            driver.waitUntilExit()
        }
        let blobd = try BlobdProcess(dataDir: dataDir)
        let checked = try run("/usr/bin/env", ["V1=\(blobd.baseURL)", "python3", "-c", Self.checker, log], timeout: 300)
        let output = String(decoding: checked.stdout, as: UTF8.self)
        #expect(checked.status == 0, "\(checked.stderr)\(output)")
        print("versioned kill -9 trial \(trial): acknowledged versions checked: \(output.trimmingCharacters(in: .whitespacesAndNewlines))")
        #expect(Int(output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0 > 0, "something was acknowledged before the kill")
        #expect(blobd.stop() == 0)
        let fsck = try run(blobdExecutable(), ["fsck", "--data-dir", dataDir])
        #expect(fsck.status == 0, "fsck after the crash: \(String(decoding: fsck.stdout, as: UTF8.self))")
    }
}

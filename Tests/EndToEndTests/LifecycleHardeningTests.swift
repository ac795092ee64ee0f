import Foundation
import LiveBlobd
import Testing

/// Lifecycle gaps found by reading the code (issue 11).
@Suite struct LifecycleHardeningTests {
    /// Starts `curl` in the background; its status code lands in the returned file.
    static func background(_ arguments: [String], in dir: TempDir, name: String) throws -> (ChildProcess, String) {
        let out = dir.path + "/" + name
        _ = FileManager.default.createFile(atPath: out, contents: nil)
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-sS", "-o", dir.path + "/" + name + ".body", "-w", "%{http_code}"] + arguments
        process.standardOutput = FileHandle(forWritingAtPath: out)
        process.standardError = FileHandle.nullDevice
        try process.run()
        return (process, out)
    }

    /// A commit held past the shutdown grace: the client gets 503 (never silence), blobd exits 0
    /// instead of stopping libmicrohttpd with the connection suspended, and nothing is left behind.
    @Test func shutdownAnswersRequestsStillWaitingForACommit() throws {
        let dir = TempDir()
        let dataDir = dir.path + "/data"
        let blobd = try BlobdProcess(["--shutdown-grace", "1"], environment: ["BLOBD_TEST_COMMIT_DELAY": "6"], dataDir: dataDir)
        let (put, status) = try Self.background(["-T", dir.file("body", Array("held".utf8)), blobd.baseURL + "/v1/blobs/held"],
                                                in: dir, name: "put")
        #expect(eventually { files(under: dataDir + "/blobs").count == 1 }, "the upload reached its commit")
        let started = Date()
        #expect(blobd.stop(timeout: 20) == 0, "a clean exit: \(blobd.stderr.suffix(500))")
        #expect(Date().timeIntervalSince(started) < 5, "the grace period bounds the shutdown, not the commit")
        put.waitUntilExit()
        let code = (try? String(contentsOfFile: status, encoding: .utf8)) ?? ""
        #expect(code == "503", "the waiting client got an answer")
        let body = (try? String(contentsOfFile: dir.path + "/put.body", encoding: .utf8)) ?? ""
        #expect(body.contains("\"status\":503"))

        // The unacknowledged upload left nothing: recovery removes its file, fsck is clean.
        let restarted = try BlobdProcess(dataDir: dataDir)
        #expect(try curl([restarted.baseURL + "/v1/blobs/held"]).status == 404)
        #expect(restarted.stop() == 0)
        #expect(files(under: dataDir + "/blobs").isEmpty)
        #expect(try run(blobdExecutable(), ["fsck", "--data-dir", dataDir]).status == 0)
    }

    /// With one worker thread, a GET on another connection is answered while a tus PATCH's
    /// completion (fsync and index commit) is in progress.
    @Test func tusCompletionDoesNotBlockItsWorker() throws {
        let dir = TempDir()
        let blobd = try BlobdProcess(["--threads", "1"], environment: ["BLOBD_TEST_COMMIT_DELAY": "4"])
        let bytes = testBytes(100_000, seed: 9)
        let tus = Tus(blobd: blobd)
        let location = try #require(try tus.create(length: bytes.count, metadata: ["key": "slow"]).header("Location"))
        let id = String(location.split(separator: "/").last ?? "")
        let (patch, status) = try Self.background(
            ["-X", "PATCH", "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Offset: 0",
             "-H", "Content-Type: application/offset+octet-stream", "--data-binary", "@" + dir.file("chunk", bytes),
             blobd.baseURL + location], in: dir, name: "patch")
        let uploadFile = blobd.dataDir + "/uploads/" + id
        #expect(eventually {
            ((try? FileManager.default.attributesOfItem(atPath: uploadFile)[.size]) as? Int) == bytes.count
        }, "every byte arrived; the completion is under way")
        let started = Date()
        #expect(try curl(["-m", "10", blobd.baseURL + "/healthz"]).status == 200)
        #expect(Date().timeIntervalSince(started) < 2, "answered while the completion waits, not after it")
        #expect(patch.isRunning, "the completion was still in progress")
        patch.waitUntilExit()
        #expect(((try? String(contentsOfFile: status, encoding: .utf8)) ?? "") == "204")
        let stored = try curl([blobd.baseURL + "/v1/blobs/slow"])
        #expect(stored.status == 200)
        #expect(sha256Hex(stored.body) == sha256Hex(bytes))
    }
}

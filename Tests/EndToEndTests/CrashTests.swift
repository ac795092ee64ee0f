import Foundation
import LiveBlobd
import Synchronization
import Testing

/// What clients were told: key → the bodies acknowledged (2xx) for it, in order.
final class Acknowledged: Sendable {
    let bodies = Mutex<[String: [[UInt8]]]>([:])
    func add(_ key: String, _ body: [UInt8]) { bodies.withLock { $0[key, default: []].append(body) } }
}

/// The logs of versions being written (`tmp/pending-N`) in a data dir.
func pendingLogs(_ dataDir: String) -> Set<String> {
    Set(files(under: dataDir + "/tmp"))
}

@Suite(.serialized) struct CrashTests {
    /// Checks every blob: acknowledged keys serve one whole version (the last acknowledged one,
    /// or a later unacknowledged one), nothing partial, and fsck finds nothing wrong.
    static func verify(dataDir: String, acknowledged: [String: [[UInt8]]], attempted: [String: [[UInt8]]]) throws -> Int {
        let crashedLogs = pendingLogs(dataDir)
        #expect(!crashedLogs.isEmpty, "the crashed run left its pending-write log")
        let blobd = try BlobdProcess(dataDir: dataDir)
        var checked = 0
        for (key, bodies) in acknowledged {
            let response = try curl([blobd.baseURL + "/v1/blobs/" + key])
            #expect(response.status == 200, "acknowledged \(key) lost")
            let candidates = attempted[key] ?? []
            let lastAcknowledged = candidates.lastIndex(of: bodies.last ?? []) ?? 0
            #expect(candidates[lastAcknowledged...].contains(response.body), "\(key) serves a partial or stale version")
            checked += 1
        }
        let listing = try curl([blobd.baseURL + "/v1/blobs?limit=10000"])
        for item in listing.json["blobs"] as? [[String: Any]] ?? [] {
            let key = item["key"] as? String ?? ""
            let body = try curl([blobd.baseURL + "/v1/blobs/" + key]).body
            #expect(attempted[key]?.contains(body) == true, "\(key) is not a whole uploaded version")
            #expect(item["sha256"] as? String == sha256Hex(body))
        }
        #expect(pendingLogs(dataDir).isDisjoint(with: crashedLogs), "recovery deletes the logs it has read")
        // New uploads are accepted at once.
        #expect(try curl(["-X", "PUT", "--data-binary", "after restart", blobd.baseURL + "/v1/blobs/fresh"]).status == 201)
        #expect(try curl(["-X", "DELETE", blobd.baseURL + "/v1/blobs/fresh"]).status == 204)
        #expect(blobd.stop() == 0)
        let fsck = try run(blobdExecutable(), ["fsck", "--data-dir", dataDir])
        #expect(fsck.status == 0, "fsck after a crash: \(String(decoding: fsck.stdout, as: UTF8.self))")
        return checked
    }

    /// kill -9 at random moments while uploads of all sizes are in flight, then restart.
    @Test func killDuringUploads() throws {
        let dir = TempDir()
        let dataDir = dir.path + "/data"
        var attempted: [String: [[UInt8]]] = [:]
        let acknowledged = Acknowledged()
        let trials = 8
        for trial in 0..<trials {
            let blobd = try BlobdProcess(dataDir: dataDir)
            var uploads: [(ChildProcess, String, [UInt8], String)] = []
            for i in 0..<8 {
                let key = "k\(i % 5)"
                let size = [0, 1, 4096, 300_000, 3_000_000][(i + trial) % 5]
                let body = testBytes(size, seed: UInt64(trial * 100 + i + 1))
                attempted[key, default: []].append(body)
                let file = dir.file("body-\(trial)-\(i)", body)
                let out = dir.path + "/status-\(trial)-\(i)"
                let process = ChildProcess()
                process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
                process.arguments = ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "--limit-rate", "20M", "-T", file,
                                     blobd.baseURL + "/v1/blobs/" + key]
                _ = FileManager.default.createFile(atPath: out, contents: nil)
                process.standardOutput = FileHandle(forWritingAtPath: out)
                process.standardError = FileHandle.nullDevice
                try process.run()
                uploads.append((process, key, body, out))
            }
            usleep(UInt32.random(in: 20_000...200_000))
            #expect(blobd.stop(signal: SIGKILL) != nil)
            for (process, key, body, out) in uploads {
                process.waitUntilExit()
                let status = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
                if status.hasPrefix("2") { acknowledged.add(key, body) }
            }
        }
        let checked = try Self.verify(dataDir: dataDir, acknowledged: acknowledged.bodies.withLock { $0 }, attempted: attempted)
        let acknowledgedCount = acknowledged.bodies.withLock { $0.values.reduce(0) { $0 + $1.count } }
        print("kill -9 trials: \(trials), uploads attempted: \(attempted.values.reduce(0) { $0 + $1.count }), "
              + "acknowledged: \(acknowledgedCount), keys checked after restart: \(checked)")
        #expect(acknowledgedCount > 0, "some uploads were acknowledged before a kill, so the restart had something to check")
        #expect(checked == acknowledged.bodies.withLock { $0.count }, "every acknowledged key was checked")
    }

    /// A crash at each step of the commit: before the link, after it, after the index commit.
    @Test(arguments: ["before-link", "after-link", "after-commit"])
    func crashAtEachCommitStep(_ point: String) throws {
        let dir = TempDir()
        let dataDir = dir.path + "/data"
        let old = testBytes(100_000, seed: 1), new = testBytes(200_000, seed: 2)
        do {
            let blobd = try BlobdProcess(dataDir: dataDir)
            #expect(try curl(["-T", dir.file("old", old), blobd.baseURL + "/v1/blobs/k"]).status == 201)
            #expect(blobd.stop() == 0)
        }
        let crashing = try BlobdProcess(environment: ["BLOBD_TEST_CRASH_AT": point], dataDir: dataDir)
        let result = try run("/usr/bin/curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-T", dir.file("new", new),
                                               crashing.baseURL + "/v1/blobs/k"])
        #expect(!String(decoding: result.stdout, as: UTF8.self).hasPrefix("2"), "no final response: the server died")
        #expect(crashing.stop(timeout: 10) != nil)
        let crashedLogs = pendingLogs(dataDir)
        #expect(!crashedLogs.isEmpty, "the crashed run left its pending-write log")

        let blobd = try BlobdProcess(dataDir: dataDir)
        let body = try curl([blobd.baseURL + "/v1/blobs/k"]).body
        // Unacknowledged, so either version may be there, but only whole.
        #expect(body == (point == "after-commit" ? new : old))
        #expect(pendingLogs(dataDir).isDisjoint(with: crashedLogs), "recovery deletes the logs it has read")
        #expect(blobd.stop() == 0)
        let fsck = try run(blobdExecutable(), ["fsck", "--data-dir", dataDir])
        #expect(fsck.status == 0, "no orphan file after recovery: \(String(decoding: fsck.stdout, as: UTF8.self))")
    }

    /// A tus upload whose completion is interrupted completes on the next request.
    @Test func crashWhileCompletingAResumableUpload() throws {
        let dir = TempDir()
        let dataDir = dir.path + "/data"
        let bytes = testBytes(50_000, seed: 3)
        let crashing = try BlobdProcess(environment: ["BLOBD_TEST_CRASH_AT": "after-link"], dataDir: dataDir)
        let location = try #require(try Tus(blobd: crashing).create(length: bytes.count, metadata: ["key": "t"]).header("Location"))
        _ = try? Tus(blobd: crashing).patch(location, offset: 0, bytes)
        #expect(crashing.stop(timeout: 10) != nil)

        let blobd = try BlobdProcess(dataDir: dataDir)
        let tus = Tus(blobd: blobd)
        #expect(try curl([blobd.baseURL + "/v1/blobs/t"]).status == 404)
        let offset = try #require(Int(try tus.head(location).header("Upload-Offset") ?? ""))
        #expect(offset == 0)
        #expect(try tus.patch(location, offset: offset, Array(bytes[offset...])).status == 204)
        #expect(try curl([blobd.baseURL + "/v1/blobs/t"]).body == bytes)
        #expect(blobd.stop() == 0)
        #expect(try run(blobdExecutable(), ["fsck", "--data-dir", dataDir]).status == 0)
    }
}

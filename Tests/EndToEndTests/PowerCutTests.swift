import Foundation
import LiveBlobd
import Testing

/// Orphans of a power cut (issue 11, point 9).
@Suite struct PowerCutTests {
    /// A power cut loses the pending-log lines of uploads in flight but keeps their files. The
    /// start after it reclaims them from the recently changed folders, and fsck finds nothing.
    @Test func orphansOfAPowerCutAreReclaimedAtStart() throws {
        let dir = TempDir()
        let dataDir = dir.path + "/data"
        do {
            let blobd = try BlobdProcess(dataDir: dataDir)
            #expect(try curl(["-X", "PUT", "--data-binary", "kept", blobd.baseURL + "/v1/blobs/kept"]).status == 201)
            #expect(blobd.stop() == 0)
        }
        // An old folder (changed two hours ago) holding an unindexed file: outside the window. New
        // versions take their folder from the clock (time / 16 mod 256), so the folder is the one
        // farthest from now, which no write of this test touches.
        let folder = String(format: "%02x", (Int(time(nil)) / 16 + 128) % 256)
        let oldName = folder + "/" + folder + String(repeating: "e", count: 30)
        let oldOrphan = dataDir + "/blobs/" + oldName
        _ = FileManager.default.createFile(atPath: oldOrphan, contents: Data("stray".utf8))
        var times = [timeval(tv_sec: time(nil) - 7200, tv_usec: 0), timeval(tv_sec: time(nil) - 7200, tv_usec: 0)]
        #expect(utimes(dataDir + "/blobs/" + folder, &times) == 0)

        // The upload is killed after its file is fsynced, before its index commit.
        let crashing = try BlobdProcess(environment: ["BLOBD_TEST_CRASH_AT": "before-link"], dataDir: dataDir)
        let result = try run("/usr/bin/curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}",
                                               "-T", dir.file("body", testBytes(200_000, seed: 8)), crashing.baseURL + "/v1/blobs/cut"])
        #expect(!String(decoding: result.stdout, as: UTF8.self).hasPrefix("2"))
        #expect(crashing.stop(timeout: 10) != nil)
        #expect(files(under: dataDir + "/blobs").count == 3, "kept, the interrupted upload's file, the old stray")
        // The power cut: the log lines never reached the disk.
        for log in pendingLogs(dataDir) { unlink(dataDir + "/tmp/" + log) }

        let blobd = try BlobdProcess(dataDir: dataDir)
        #expect(try curl([blobd.baseURL + "/v1/blobs/kept"]).text == "kept")
        #expect(try curl([blobd.baseURL + "/v1/blobs/cut"]).status == 404)
        #expect(blobd.stop() == 0)
        let remaining = Set(files(under: dataDir + "/blobs"))
        #expect(remaining.count == 2, "the interrupted upload's file is gone: \(remaining)")
        #expect(remaining.contains(oldName), "folders outside the window are not scanned")
        unlink(oldOrphan)
        let fsck = try run(blobdExecutable(), ["fsck", "--data-dir", dataDir])
        #expect(fsck.status == 0, "\(String(decoding: fsck.stdout, as: UTF8.self))")
    }

    /// After a clean stop the start does not scan folders at all: a stray file in a folder
    /// changed a moment ago stays for fsck to report.
    @Test func aCleanStopSkipsTheScan() throws {
        let dir = TempDir()
        let dataDir = dir.path + "/data"
        do {
            let blobd = try BlobdProcess(dataDir: dataDir)
            #expect(try curl(["-X", "PUT", "--data-binary", "x", blobd.baseURL + "/v1/blobs/x"]).status == 201)
            #expect(blobd.stop() == 0)
        }
        #expect(FileManager.default.fileExists(atPath: dataDir + "/tmp/clean-stop"))
        let stray = dataDir + "/blobs/00/00" + String(repeating: "d", count: 30)
        _ = FileManager.default.createFile(atPath: stray, contents: Data("stray".utf8))
        let blobd = try BlobdProcess(dataDir: dataDir)
        #expect(!FileManager.default.fileExists(atPath: dataDir + "/tmp/clean-stop"), "the mark is consumed at start")
        #expect(blobd.stop() == 0)
        #expect(FileManager.default.fileExists(atPath: stray))
        #expect(try run(blobdExecutable(), ["fsck", "--data-dir", dataDir]).status == 1)
    }
}

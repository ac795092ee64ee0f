import Foundation
import LiveBlobd
import Testing

@Suite struct LifecycleTests {
    @Test func sigtermExitsZero() throws {
        let blobd = try BlobdProcess()
        #expect(try curl([blobd.baseURL + "/healthz"]).status == 200)
        #expect(blobd.stop(signal: SIGTERM) == 0)
    }

    @Test func sigintExitsZero() throws {
        let blobd = try BlobdProcess()
        #expect(blobd.stop(signal: SIGINT) == 0)
    }

    @Test func sigtermLetsInFlightDownloadsFinish() throws {
        let blobd = try BlobdProcess()
        let dir = TempDir()
        let bytes = testBytes(3 * 1024 * 1024, seed: 5)
        _ = try curl(["-T", dir.file("b", bytes), blobd.baseURL + "/v1/blobs/slow"])
        let out = dir.path + "/out"
        let download = ChildProcess()
        download.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        download.arguments = ["-sS", "--limit-rate", "2M", "-o", out, blobd.baseURL + "/v1/blobs/slow"]
        try download.run()
        let started = Date().addingTimeInterval(10)
        while ((try? FileManager.default.attributesOfItem(atPath: out)[.size] as? Int) ?? 0) == 0 && Date() < started { usleep(10_000) }
        #expect(blobd.stop(signal: SIGTERM) == 0)
        download.waitUntilExit()
        #expect(download.terminationStatus == 0)
        #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: out))) == bytes)
    }

    @Test func secondBlobdOnTheSameDataDirIsRefused() throws {
        let blobd = try BlobdProcess()
        let second = try run(blobdExecutable(), ["--data-dir", blobd.dataDir, "--listen", "127.0.0.1:0"], timeout: 30)
        #expect(second.status == 1)
        #expect(second.stderr.contains("in use by another blobd"))
        #expect(try curl([blobd.baseURL + "/healthz"]).status == 200)
    }

    @Test func readerKeepsItsVersionAcrossReplaceAndDelete() throws {
        let blobd = try BlobdProcess()
        let dir = TempDir()
        let old = testBytes(4 * 1024 * 1024, seed: 11)
        let url = blobd.baseURL + "/v1/blobs/versioned"
        _ = try curl(["-T", dir.file("old", old), url])
        let out = dir.path + "/out"
        let download = ChildProcess()
        download.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        download.arguments = ["-sS", "--limit-rate", "4M", "-o", out, url]
        try download.run()
        let deadline = Date().addingTimeInterval(10)
        while ((try? FileManager.default.attributesOfItem(atPath: out)[.size] as? Int) ?? 0) == 0 && Date() < deadline { usleep(10_000) }
        // Replace, then delete, while the download is still running.
        #expect(try curl(["-T", dir.file("new", testBytes(1000, seed: 12)), url]).status == 200)
        #expect(try curl(["-X", "DELETE", url]).status == 204)
        download.waitUntilExit()
        #expect(download.terminationStatus == 0)
        #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: out))) == old)
        #expect(try curl([url]).status == 404)
    }

    @Test func clientHangingUpMidBodyLeavesNoTrace() throws {
        let blobd = try BlobdProcess()
        let url = blobd.baseURL + "/v1/blobs/kept"
        _ = try curl(["-X", "PUT", "--data-binary", "old version", url])
        let head = "PUT /v1/blobs/kept HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n"
        let connection = try RawConnection(port: blobd.port)
        connection.send(Array(head.utf8) + testBytes(300_000))
        let blobs = blobd.dataDir + "/blobs"
        func blobFiles() -> Int { files(under: blobs).count }
        #expect(eventually { blobFiles() == 2 }, "the upload is streaming into a new file beside the old version")
        connection.hangUp()
        #expect(eventually { blobFiles() == 1 }, "the new file is removed when the client hangs up")
        #expect(try curl([url]).text == "old version")
    }

    @Test func restartKeepsEveryBlob() throws {
        let dir = TempDir()
        let dataDir = dir.path + "/data"
        var etags: [String: String] = [:]
        do {
            let blobd = try BlobdProcess(dataDir: dataDir)
            for i in 0..<20 {
                etags["k\(i)"] = try curl(["-X", "PUT", "--data-binary", "blob \(i)", blobd.baseURL + "/v1/blobs/k\(i)"]).header("ETag")
            }
            #expect(blobd.stop() == 0)
        }
        let blobd = try BlobdProcess(dataDir: dataDir)
        for i in 0..<20 {
            let response = try curl([blobd.baseURL + "/v1/blobs/k\(i)"])
            #expect(response.text == "blob \(i)")
            #expect(response.header("ETag") == etags["k\(i)"])
        }
    }

    @Test func environmentConfiguresAndFlagsWin() throws {
        let dir = TempDir()
        let blobd = try BlobdProcess(["--max-blob-size", "5"], environment: ["BLOBD_MAX_BLOB_SIZE": "1"], dataDir: dir.path + "/d")
        #expect(try curl(["-X", "PUT", "--data-binary", "12345", blobd.baseURL + "/v1/blobs/k"]).status == 201)
        #expect(try curl(["-X", "PUT", "--data-binary", "123456", blobd.baseURL + "/v1/blobs/k"]).status == 413)
    }

    @Test func invalidFlagsExitWithAMessage() throws {
        let result = try run(blobdExecutable(), ["--listen", "nonsense"], timeout: 30)
        #expect(result.status != 0)
        #expect(result.stderr.contains("--listen"))
    }
}

import Foundation
import LiveBlobd
import Testing

/// A small tmpfs the test mounts itself (blobd's test runs as root, in CI too).
final class SmallFileSystem {
    let path: String
    private let dir: TempDir

    /// True where this process may mount a tmpfs (root with CAP_SYS_ADMIN).
    static let canMount: Bool = {
        guard getuid() == 0 else { return false }
        do {
            _ = try SmallFileSystem(megabytes: 1)
            return true
        } catch {
            return false
        }
    }()

    /// `inodes`: how many files and folders it can hold (tmpfs's nr_inodes), nil for its default.
    init(megabytes: Int, inodes: Int? = nil) throws {
        dir = TempDir("blobd-tmpfs")
        path = dir.path + "/mnt"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let options = "size=\(megabytes)m" + (inodes.map { ",nr_inodes=\($0)" } ?? "")
        let result = try run("/bin/mount", ["-t", "tmpfs", "-o", options, "tmpfs", path], timeout: 10)
        guard result.status == 0 else { throw TestFailure("cannot mount a tmpfs: \(result.stderr)") }
    }

    /// Fills the file system to its last page with a file `name`; returns its path.
    func fill(_ name: String = "filler") -> String {
        let file = path + "/" + name
        let descriptor = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        defer { close(descriptor) }
        let chunk = [UInt8](repeating: 0xAB, count: 64 * 1024)
        var size = chunk.count
        while size > 0 {
            let written = chunk.withUnsafeBytes { write(descriptor, $0.baseAddress, size) }
            if written < 0 { size /= 2 }
        }
        return file
    }

    deinit { _ = try? run("/bin/umount", ["-l", path], timeout: 10) }
}

@Suite(.enabled(if: SmallFileSystem.canMount, "needs root to mount a tmpfs"))
struct DiskFullTests {
    @Test func enospcGives507AndKeepsEverythingElse() throws {
        let small = try SmallFileSystem(megabytes: 12)
        let dir = TempDir()
        let blobd = try BlobdProcess(dataDir: small.path + "/data")
        let b = blobd.baseURL
        let old = testBytes(2 * 1024 * 1024, seed: 1)
        #expect(try curl(["-T", dir.file("old", old), b + "/v1/blobs/k"]).status == 201)

        // Announced too large for the free space: refused before the body.
        let announced = try curl(["-T", dir.file("big", testBytes(20 * 1024 * 1024, seed: 2)), b + "/v1/blobs/k"])
        #expect(announced.status == 507)
        #expect(announced.header("Content-Type") == "application/problem+json")
        // Chunked, so the disk really fills up mid-body.
        let streamed = try curl(["-T", "-", "-H", "Transfer-Encoding: chunked", b + "/v1/blobs/k"], stdin: testBytes(20 * 1024 * 1024, seed: 3))
        #expect(streamed.status == 507)
        #expect(streamed.json["status"] as? Int == 507)
        // The partial file is gone, the old version intact, and reads and small writes still work.
        #expect(eventually { files(under: blobd.dataDir + "/blobs").count == 1 })
        #expect(sha256Hex(try curl([b + "/v1/blobs/k"]).body) == sha256Hex(old))
        #expect(try curl(["-X", "PUT", "--data-binary", "small", b + "/v1/blobs/small"]).status == 201)
        // A resumable upload that fills the disk: 507, nothing corrupted, offset unchanged.
        let tus = Tus(blobd: blobd)
        #expect(try tus.create(length: 30 * 1024 * 1024).status == 507, "a length beyond the free space is refused at creation")
        let location = try #require(try tus.create(length: nil).header("Location"))
        let patch = try tus.patch(location, offset: 0, testBytes(15 * 1024 * 1024, seed: 4))
        #expect(patch.status == 507)
        #expect(try tus.head(location).header("Upload-Offset") == "0")
        #expect(sha256Hex(try curl([b + "/v1/blobs/k"]).body) == sha256Hex(old))
        #expect(blobd.stop() == 0)
    }

    /// A full disk: even a write that needs no data block gets 507, the old version intact, and
    /// writes work again once space is freed.
    @Test func fullDiskDuringTheIndexWriteGives507() throws {
        let small = try SmallFileSystem(megabytes: 4)
        let blobd = try BlobdProcess(dataDir: small.path + "/data")
        let b = blobd.baseURL
        #expect(try curl(["-X", "PUT", "--data-binary", "old version", b + "/v1/blobs/k"]).status == 201)
        let filler = small.fill()
        // An empty body needs no data block, only the index's WAL must grow.
        let response = try curl(["-X", "PUT", "-H", "Content-Length: 0", "--data-binary", "", b + "/v1/blobs/k"])
        #expect(response.status == 507, "\(response.text)")
        #expect(response.header("Content-Type") == "application/problem+json")
        #expect(response.json["type"] as? String == "https://blobd.dev/problems/insufficient-storage")
        #expect(try curl([b + "/v1/blobs/k"]).text == "old version")
        unlink(filler)
        #expect(try curl(["-X", "PUT", "--data-binary", "new version", b + "/v1/blobs/k"]).status == 200)
        #expect(try curl([b + "/v1/blobs/k"]).text == "new version")
        #expect(blobd.stop() == 0)
        #expect(try run(blobdExecutable(), ["fsck", "--data-dir", small.path + "/data"]).status == 0)
    }
}

@Suite struct ConcurrencyTests {
    @Test func concurrentPutsOfOneKeyLeaveOneWholeVersion() throws {
        let blobd = try BlobdProcess()
        let dir = TempDir()
        let url = blobd.baseURL + "/v1/blobs/contended"
        let bodies = (0..<8).map { testBytes(1_000_000 + $0, seed: UInt64($0 + 10)) }
        let files = bodies.enumerated().map { dir.file("b\($0.offset)", $0.element) }
        let processes = try files.map { file in
            let process = ChildProcess()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            process.arguments = ["-sS", "-o", "/dev/null", "-T", file, url]
            try process.run()
            return process
        }
        processes.forEach { $0.waitUntilExit() }
        let body = try curl([url]).body
        #expect(bodies.contains(body), "one whole version, never a mix")
    }

    @Test func ifMatchRaceHasExactlyOneWinner() throws {
        let blobd = try BlobdProcess()
        let dir = TempDir()
        let url = blobd.baseURL + "/v1/blobs/race"
        for round in 0..<5 {
            let etag = try #require(try curl(["-X", "PUT", "--data-binary", "base \(round)", url]).header("ETag"))
            let results = (0..<2).map { dir.path + "/status-\(round)-\($0)" }
            let processes = try (0..<2).map { i in
                let process = ChildProcess()
                process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
                process.arguments = ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-H", "If-Match: \(etag)",
                                     "-T", dir.file("w\(round)-\(i)", testBytes(2_000_000, seed: UInt64(round * 2 + i + 1))), url]
                _ = FileManager.default.createFile(atPath: results[i], contents: nil)
                process.standardOutput = FileHandle(forWritingAtPath: results[i])
                try process.run()
                return process
            }
            processes.forEach { $0.waitUntilExit() }
            let statuses = results.map { (try? String(contentsOfFile: $0, encoding: .utf8)) ?? "" }.sorted()
            #expect(statuses == ["200", "412"], "round \(round): \(statuses)")
        }
    }

    @Test func thirtyTwoParallelUploadsAndDownloads() async throws {
        let blobd = try BlobdProcess()
        let dir = TempDir()
        let bodies = (0..<32).map { testBytes(50_000 + $0 * 10_000, seed: UInt64($0 + 100)) }
        try await withThrowingTaskGroup(of: Int.self) { group in
            for (i, body) in bodies.enumerated() {
                let file = dir.file("p\(i)", body)
                group.addTask { try curl(["-T", file, blobd.baseURL + "/v1/blobs/parallel/\(i)"]).status }
            }
            for try await status in group { #expect(status == 201) }
        }
        try await withThrowingTaskGroup(of: (Int, [UInt8]).self) { group in
            for i in bodies.indices {
                group.addTask { (i, try curl([blobd.baseURL + "/v1/blobs/parallel/\(i)"]).body) }
            }
            for try await (i, body) in group { #expect(body == bodies[i], "blob \(i)") }
        }
    }
}

@Suite struct SlowClientTests {
    @Test func idleConnectionsTimeOut() throws {
        let blobd = try BlobdProcess(["--connection-timeout", "1"])
        let started = Date()
        // Half a request head, then nothing (slowloris): the server closes the connection.
        let response = try rawExchange(port: blobd.port, Array("GET /v1/blobs/k HTTP/1.1\r\nHost: x\r\n".utf8), timeout: 10)
        let elapsed = Date().timeIntervalSince(started)
        #expect(elapsed < 8, "closed after \(elapsed) s")
        #expect(!response.contains("200 OK"))
        #expect(try curl([blobd.baseURL + "/healthz"]).status == 200)
    }

    @Test func connectionsBeyondTheLimitAreRefused() throws {
        let blobd = try BlobdProcess(["--max-connections", "2", "--connection-timeout", "30"])
        let first = try RawConnection(port: blobd.port), second = try RawConnection(port: blobd.port)
        first.send(Array("GET /healthz HTTP/1.1\r\nHost: x\r\n".utf8))
        second.send(Array("GET /healthz HTTP/1.1\r\nHost: x\r\n".utf8))
        usleep(200_000)
        let refused = try rawExchange(port: blobd.port, Array("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".utf8), timeout: 3)
        #expect(!refused.contains("200 OK"), "a third connection is not served")
        first.hangUp()
        second.hangUp()
        #expect(eventually { (try? curl([blobd.baseURL + "/healthz"]).status) == 200 })
    }
}

/// CI runs `make test` as root, so the disk-full suite must run there, never skip quietly.
@Suite struct DiskFullCoverageTests {
    @Test(.enabled(if: getuid() == 0, "only root can mount a tmpfs"))
    func diskFullSuiteRunsAsRoot() {
        #expect(SmallFileSystem.canMount, "running as root but cannot mount a tmpfs: DiskFullTests would be skipped")
    }
}

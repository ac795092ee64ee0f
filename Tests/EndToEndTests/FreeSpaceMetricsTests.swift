import Foundation
import LiveBlobd
import Testing

/// `/metrics` reports the data directory's free space, read at each render, and the least free
/// space writes leave (issue 35, item 19), on a tmpfs of its own so that nothing else moves it.
@Suite(.enabled(if: SmallFileSystem.canMount, "needs root to mount a tmpfs"))
struct FreeSpaceMetricsTests {
    /// The bytes an unprivileged writer may still use on the file system of `path` (statvfs).
    static func available(_ path: String) throws -> UInt64 {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { throw TestFailure("statvfs \(path): errno \(errno)") }
        return UInt64(info.f_bavail) * UInt64(info.f_frsize)
    }

    @Test func freeBytesFollowTheDisk() throws {
        let small = try SmallFileSystem(megabytes: 32)
        let blobd = try BlobdProcess(["--min-free-bytes", "2M"], dataDir: small.path + "/data")
        let before = try curl([blobd.baseURL + "/metrics"]).text
        #expect(isPrometheusText(before), "\(before)")
        #expect(sample(before, "blobd_data_free_bytes").map(UInt64.init) == (try Self.available(small.path)))
        #expect(before.contains("# TYPE blobd_data_free_bytes gauge\n"))
        #expect(sample(before, "blobd_data_min_free_bytes") == 2_097_152)

        let body = testBytes(6 << 20)
        let path = small.path + "/upload"
        _ = FileManager.default.createFile(atPath: path, contents: Data(body))
        #expect(try curl(["-X", "PUT", "--data-binary", "@" + path, blobd.baseURL + "/v1/blobs/big"]).status == 201)
        unlink(path)
        let after = try curl([blobd.baseURL + "/metrics"]).text
        let (was, now) = (sample(before, "blobd_data_free_bytes") ?? 0, sample(after, "blobd_data_free_bytes") ?? 0)
        #expect(UInt64(now) == (try Self.available(small.path)), "read when /metrics is asked for")
        #expect(was - now >= Double(body.count), "a 6 MiB blob takes at least 6 MiB: \(was) → \(now)")
    }
}

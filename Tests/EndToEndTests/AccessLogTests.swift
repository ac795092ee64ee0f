import Foundation
import LiveBlobd
import Testing

/// The access log is written in batches (issue 11, point 12): lines appear within a second, and
/// none is lost at SIGTERM.
@Suite struct AccessLogTests {
    @Test func bufferedLinesAppearSoonAndSurviveSIGTERM() throws {
        let blobd = try BlobdProcess()
        _ = try curl([blobd.baseURL + "/healthz?first"])
        #expect(eventually(within: 2) { blobd.stderr.contains("http.route=/healthz") }, "flushed within a second")
        let urls = (0..<300).map { blobd.baseURL + "/readyz?n=\($0)" }
        let result = try run("/usr/bin/curl", ["-s", "-o", "/dev/null"] + urls)
        #expect(result.status == 0)
        #expect(blobd.stop() == 0)
        let lines = blobd.stderr.split(separator: "\n")
        #expect(lines.filter { $0.contains(" info blobd: request ") && $0.contains("http.route=/readyz") }.count == 300,
                "every request of the last half second is logged before exit")
        #expect(lines.last?.contains("Stopped") == true)
    }
}

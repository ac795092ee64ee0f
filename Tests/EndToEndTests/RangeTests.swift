import Foundation
import LiveBlobd
import Testing

/// Ranges as a real client resumes with them; the HTTP semantics of ranges are in
/// HTTPSemanticsTests/RangeTests, in process and live.
@Suite struct RangeEndToEndTests {
    @Test func resumeWithCurlContinueAt() throws {
        let blobd = try BlobdProcess()
        let url = blobd.baseURL + "/v1/blobs/ranged"
        let bytes = testBytes(10_000, seed: 7)
        let dir = TempDir()
        _ = try curl(["-T", dir.file("b", bytes), "-H", "Content-Type: text/x-ranged", url])
        let partial = dir.file("partial", Array(bytes[0..<4000]))
        let result = try run("/usr/bin/curl", ["-sS", "-C", "-", "-o", partial, url])
        #expect(result.status == 0)
        #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: partial))) == bytes)
    }
}

import Foundation
import LiveBlobd
import Testing

@Suite struct TransportTests {
    /// libmicrohttpd corks every sendfile() chunk of a large file response but the last; blobd's
    /// own setsockopt() keeps TCP_CORK from reaching the kernel (see Sources/CNoCork). The dynamic
    /// linker's binding log shows whether libmicrohttpd really calls blobd's definition, and a
    /// download of many chunks must still arrive whole.
    @Test func libmicrohttpdSetsSocketOptionsThroughBlobd() throws {
        let logs = TempDir("blobd-ld-debug")
        let blobd = try BlobdProcess([], environment: ["LD_DEBUG": "bindings", "LD_DEBUG_OUTPUT": logs.path + "/ld"])
        let body = testBytes(3 * 1024 * 1024 + 12_345, seed: 41)
        let source = logs.file("body", body)
        #expect(try curl(["-X", "PUT", "--data-binary", "@" + source, blobd.baseURL + "/v1/blobs/chunks"]).status == 201)
        let whole = try curl([blobd.baseURL + "/v1/blobs/chunks"])
        #expect(whole.status == 200)
        #expect(whole.body == body)
        let tail = try curl(["-H", "Range: bytes=1000000-", blobd.baseURL + "/v1/blobs/chunks"])
        #expect(tail.status == 206)
        #expect(tail.body == Array(body[1_000_000...]))

        let log = try FileManager.default.contentsOfDirectory(atPath: logs.path)
            .filter { $0.hasPrefix("ld.") }
            .map { try String(contentsOfFile: logs.path + "/" + $0, encoding: .utf8) }
            .joined()
        let binding = log.split(separator: "\n").first { $0.contains("libmicrohttpd") && $0.contains("`setsockopt'") }
        #expect(binding?.contains("to " + blobdExecutable()) == true, "\(binding ?? "no binding of setsockopt logged")")
    }
}

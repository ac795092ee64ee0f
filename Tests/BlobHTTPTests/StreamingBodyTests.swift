import BlobStore
import Testing
@testable import HTTPCore
@testable import Observability

/// What `StreamingBody` does without a connection: the first failure is latched and every later
/// chunk is dropped unwritten; a body is counted in flight until it is dropped.
@Suite struct StreamingBodyTests {
    private struct Refused: Error {}

    private final class Log {
        var written: [[UInt8]] = []
        var abandoned = 0
    }

    private static func inFlight(_ metrics: Metrics) -> String? {
        metrics.render(blobs: nil).split(separator: "\n").first { $0.hasPrefix("blobd_uploads_in_flight ") }.map(String.init)
    }

    @Test func laterChunksAfterAFailureAreNotWritten() {
        let log = Log()
        let metrics = Metrics()
        let pool = BlockingPool(name: "test-commit", threads: 1)
        defer { _ = pool.shutdown() }
        let body = StreamingBody(committers: pool, metrics: metrics, write: { chunk in
            if chunk.first == 2 { throw Refused() }
            log.written.append(Array(chunk))
        }, abandon: { log.abandoned += 1 }, end: { _, _ in Issue.record("no end for a dropped body") })
        #expect(Self.inFlight(metrics) == "blobd_uploads_in_flight 1")
        for chunk: [UInt8] in [[1, 1], [2, 2], [3, 3], [1, 4]] {
            chunk.withUnsafeBytes { body.consume($0) }
        }
        #expect(log.written == [[1, 1]])
        body.abandon()
        #expect(log.abandoned == 1)
        #expect(Self.inFlight(metrics) == "blobd_uploads_in_flight 0")
    }

    @Test func everyChunkIsWrittenInOrderWithoutAFailure() {
        let log = Log()
        let pool = BlockingPool(name: "test-commit", threads: 1)
        defer { _ = pool.shutdown() }
        let body = StreamingBody(committers: pool, write: { log.written.append(Array($0)) },
                                 abandon: { log.abandoned += 1 }, end: { _, _ in })
        for chunk: [UInt8] in [[1], [2, 3], [], [4, 5, 6]] {
            chunk.withUnsafeBytes { body.consume($0) }
        }
        #expect(log.written == [[1], [2, 3], [], [4, 5, 6]])
        #expect(log.abandoned == 0)
    }
}

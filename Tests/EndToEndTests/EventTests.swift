import Foundation
import LiveBlobd
import Testing

/// Events (issue 23): each scenario of `Events/events_e2e.py` launches the real blobd and a
/// webhook receiver that verifies every Standard Webhooks signature with the `standardwebhooks`
/// package, drives blobd with curl-like requests, boto3 and tuspy, and asserts exact event names,
/// keys, sizes, eTags and digests, ordering per key, and delivery across a stopped receiver,
/// kill -9 (at random, and at each step of a commit and of a delivery) and a dead cluster node.
@Suite(.serialized) struct EventTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Events/events_e2e.py").path

    static func scenario(_ name: String, environment: [String] = []) throws {
        let result = try run("/usr/bin/env", ["BLOBD_BIN=\(blobdExecutable())"] + environment + ["python3", script, name], timeout: 240)
        #expect(result.status == 0, "\(name): \(result.stderr)\n\(String(decoding: result.stdout, as: UTF8.self))")
    }

    /// Every operation of every dialect, prefix and suffix filters, the S3 and /v1
    /// configuration APIs and their refusals, and the queue API.
    @Test func operations() throws { try Self.scenario("operations") }

    /// The receiver stopped during 500 mixed writes: every one arrives once it is back, in order per key.
    @Test func receiverDown() throws { try Self.scenario("receiver-down") }

    /// kill -9 in the middle of 500 mixed writes: every acknowledged write arrives, and the last
    /// event of each key tells its state.
    @Test func killDuringWrites() throws { try Self.scenario("kill9") }

    /// kill -9 at each step of a commit (PUT and tus) and of a delivery.
    @Test func crashAtEachStep() throws { try Self.scenario("crash-steps") }

    /// Two nodes on PostgreSQL, one killed: the other delivers its events.
    @Test(.enabled(if: PostgresServer.isInstalled, "PostgreSQL 15 is installed by make deps"))
    func clusterTakeover() throws {
        let postgres = try PostgresServer()
        try Self.scenario("cluster", environment: ["PG_URL=\(postgres.url)"])
    }
}

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

    /// A blob the expiry sweep removes gets its LifecycleExpiration:Delete event.
    @Test func lifecycleExpiration() throws { try Self.scenario("lifecycle") }

    /// A versioned bucket: version ids in events, delete markers, removal by id, and the
    /// expiry sweep's delete marker.
    @Test func versionedBucket() throws { try Self.scenario("versions") }

    /// Backoff, then a drop with a warning and a metric past --notify-retention.
    @Test func retention() throws { try Self.scenario("retention") }

    /// Two nodes on PostgreSQL, one killed: the other delivers its events.
    @Test(.enabled(if: PostgresServer.isInstalled, "PostgreSQL 15 is installed by make deps"))
    func clusterTakeover() throws {
        let postgres = try PostgresServer()
        try Self.scenario("cluster", environment: ["PG_URL=\(postgres.url)"])
    }

    /// `check-config` shows the targets and refuses what blobd would refuse: an https:// target
    /// (blobd links no TLS), a secret for no target or not in whsec_ form, a bootstrap
    /// subscription naming an unknown target.
    @Test func targetsAreChecked() throws {
        let dir = TempDir()
        let secret = "whsec_" + Data("0123456789abcdef".utf8).base64EncodedString()
        let base = ["check-config", "--data-dir", dir.path + "/data"]
        let good = try run("/usr/bin/env", ["BLOBD_NOTIFY_WEBHOOK_FROMENV=http://127.0.0.1:9/env", blobdExecutable()] + base
                           + ["--notify-webhook", "hook=http://127.0.0.1:9/x", "--notify-secret", "hook=" + secret,
                              "--notify-retention", "2d"])
        let text = String(decoding: good.stdout, as: UTF8.self)
        #expect(good.status == 0, "\(good.stderr)")
        #expect(text.contains("notify-webhook: FROMENV=http://127.0.0.1:9/env, hook=http://127.0.0.1:9/x (signed)\n"), "\(text)")
        #expect(text.contains("notify-retention: 172800 s\n"))
        #expect(!good.stderr.contains("BLOBD_NOTIFY_WEBHOOK_FROMENV is no setting"), "\(good.stderr)")
        let https = try run(blobdExecutable(), base + ["--notify-webhook", "hook=https://example.com/hook"])
        #expect(https.status == 64 && https.stderr.contains("https:// targets are not supported"), "\(https.stderr)")
        let orphan = try run(blobdExecutable(), base + ["--notify-secret", "nope=" + secret])
        #expect(orphan.status == 64 && orphan.stderr.contains("--notify-secret names 'nope', which no --notify-webhook defines"))
        let raw = try run(blobdExecutable(), base + ["--notify-webhook", "hook=http://127.0.0.1:9/", "--notify-secret", "hook=plain"])
        #expect(raw.status == 64 && raw.stderr.contains("expected whsec_"))
        let file = dir.file("bootstrap.json", Array("""
            {"buckets": [{"name": "logs", "notifications": {"subscriptions": [{"target": "other", "events": ["s3:ObjectCreated:*"]}]}}]}
            """.utf8))
        let unknown = try run(blobdExecutable(), base + ["--notify-webhook", "hook=http://127.0.0.1:9/", "--bootstrap", file])
        #expect(unknown.status == 2 && unknown.stderr.contains("target 'other' is not a configured --notify-webhook"), "\(unknown.stderr)")
        let accepted = dir.file("accepted.json", Array("""
            {"buckets": [{"name": "logs", "notifications": {"subscriptions": [{"target": "other", "events": ["s3:ObjectCreated:*"]}]}}],
             "keys": [{"name": "admin", "grants": ["admin"], "token": "bootstrap-admin-token"}]}
            """.utf8))
        let started = try BlobdProcess(["--notify-webhook", "other=http://127.0.0.1:9/", "--bootstrap", accepted])
        let stored = try curl(["-H", "Authorization: Bearer bootstrap-admin-token", started.baseURL + "/v1/admin/buckets/logs/notifications"])
        #expect(stored.status == 200)
        #expect(String(decoding: stored.body, as: UTF8.self) == #"{"subscriptions":[{"id":"subscription-1","target":"other","#
                + #""events":["s3:ObjectCreated:*"],"prefix":"","suffix":""}]}"#)
    }
}

import BlobStore
import Foundation
import HTTPCore
import Logging

/// The delivery loop of one node (DESIGN.md §6): on a thread of its own, it claims due events
/// from the outbox with a lease, POSTs each to its webhook with a stable `webhook-id` (the
/// event's id), deletes it on a 2xx, and otherwise retries with exponential backoff (capped at
/// 5 minutes) until `--notify-retention`, then drops it with a warning and a metric. The outbox
/// hands out only the oldest event of each (target, key), so a key's events arrive in order.
/// A node that dies leaves leases that run out; another node then takes the events over.
/// Nothing here runs on a request's or a commit's path.
final class EventDelivery: Sendable {
    /// Where a test may SIGKILL the process (`BLOBD_TEST_EVENT_CRASH_AT`).
    enum Step: String {
        /// Events are claimed, none sent.
        case afterClaim = "after-claim"
        /// The receiver acknowledged an event, which is not deleted yet.
        case afterSend = "after-send"
    }

    private let outbox: any EventOutbox
    private let targets: [String: WebhookTarget]
    private let node: String
    private let retentionMillis: Int64
    private let metrics: EventMetrics
    private let logger: Logger
    private let crashAt: Step?
    private let firstBackoffMillis: Int64
    private let leaseMillis: Int64
    /// Milliseconds to connect, and again for the answer: 10 s, or a third of a shorter lease.
    private let sendTimeoutMillis: Int64
    static let maximumBackoffMillis: Int64 = 300_000
    static let batch = 256

    init(outbox: any EventOutbox, targets: [String: WebhookTarget], node: String, retention: Int, metrics: EventMetrics,
         logger: Logger, testing: TestSettings?) {
        self.outbox = outbox
        self.targets = targets
        self.node = node
        self.retentionMillis = Int64(retention) * 1000
        self.metrics = metrics
        self.logger = logger
        crashAt = testing?.eventCrashAt.flatMap(Step.init)
        firstBackoffMillis = Self.millis(testing?.eventBackoff, default: 1)
        leaseMillis = Self.millis(testing?.eventLease, default: 30)
        sendTimeoutMillis = min(10_000, leaseMillis / 3)
        metrics.configure(targets: Array(targets.keys))
    }

    /// Starts the loop on its own thread; it runs until the process exits.
    func start() {
        let thread = Thread { [self] in
            // Below the request and commit threads: deliveries take what CPU they leave (on Linux
            // the nice value is per thread, and 0 names the calling one).
            setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)
            var lastStats: Int64 = 0
            // One kept-alive connection per webhook, owned by this thread.
            var connections: [String: HTTPConnection] = [:]
            while true {
                let now = clock_millis()
                if now - lastStats >= 1000 {
                    lastStats = now
                    if let stats = try? outbox.eventQueueStats() { metrics.queue(stats) }
                }
                let worked: Bool
                do throws(StoreError) {
                    worked = try round(now: now, connections: &connections)
                } catch {
                    logger.warning("Cannot read the event outbox; retrying", metadata: ["error": "\(error)"])
                    worked = false
                }
                if !worked { usleep(100_000) }
            }
        }
        thread.name = "blobd-events"
        thread.start()
    }

    /// Claims and sends one batch; false when there was nothing to do.
    private func round(now: Int64, connections: inout [String: HTTPConnection]) throws(StoreError) -> Bool {
        // Claims, deletions and retries are bookkeeping: one write each per round, whatever the batch.
        let claimed = try outbox.claimEvents(node: node, now: now, leaseUntil: now + leaseMillis, limit: Self.batch)
        guard !claimed.isEmpty else { return false }
        reached(.afterClaim)
        // After one failure a target is not tried again in this round: its other events wait as long.
        var waiting: [String: Int64] = [:]
        // Deleted together after the round: the batch holds one event per (target, key), so no
        // later event of a key can go out before its predecessor is deleted.
        var done: [Int64] = []
        // Released together after the round too (until then this node's lease keeps them).
        var retries: [EventRetry] = []
        defer {
            do throws(StoreError) { try outbox.removeEvents(done) } catch {
                logger.warning("Delivered events could not be deleted; they will be sent again", metadata: ["error": "\(error)"])
            }
            do throws(StoreError) { try outbox.retryEvents(retries) } catch {
                logger.warning("Events to retry could not be released; they wait for their lease", metadata: ["error": "\(error)"])
            }
        }
        let leaseUntil = now + leaseMillis
        for event in claimed {
            // A send may take the whole timeout: one that could outlive the lease waits for the
            // next round, so that no other node can take the event while it is in flight.
            if clock_millis() + sendTimeoutMillis + leaseMillis / 10 >= leaseUntil {
                retries.append(EventRetry(id: event.id, attempts: event.attempts, nextAttempt: event.nextAttempt))
                continue
            }
            if now - event.created > retentionMillis {
                logger.warning("An event was not delivered within --notify-retention; dropped",
                               metadata: ["event.id": "\(event.id)", "target": "\(event.target)", "event": "\(event.event)",
                                          "attempts": "\(event.attempts)"])
                done.append(event.id)
                metrics.dropped(event.target)
                continue
            }
            if let until = waiting[event.target] {
                retries.append(EventRetry(id: event.id, attempts: event.attempts, nextAttempt: until))
                continue
            }
            if send(event, connections: &connections) {
                reached(.afterSend)
                done.append(event.id)
                metrics.delivered(event.target)
            } else {
                metrics.failed(event.target)
                let attempts = event.attempts + 1
                let next = clock_millis() + backoff(attempts: attempts)
                retries.append(EventRetry(id: event.id, attempts: attempts, nextAttempt: next))
                waiting[event.target] = next
            }
        }
        return true
    }

    /// Milliseconds of a test's setting in seconds (0.01 to 3600), else of `default`.
    private static func millis(_ seconds: Double?, default fallback: Double) -> Int64 {
        guard let seconds, seconds.isFinite, (0.01...3600).contains(seconds) else { return Int64(fallback * 1000) }
        return Int64(seconds * 1000)
    }

    /// The wait after `attempts` failed attempts: doubling from the first, at most 5 minutes.
    func backoff(attempts: Int) -> Int64 {
        let doublings = min(max(attempts - 1, 0), 20)
        return min(Self.maximumBackoffMillis, firstBackoffMillis << doublings)
    }

    /// POSTs an event on its webhook's kept connection; true on a 2xx.
    private func send(_ event: OutboxEvent, connections: inout [String: HTTPConnection]) -> Bool {
        guard let target = targets[event.target] else {
            logger.warning("An event names a target this node does not have (--notify-webhook)", metadata: ["target": "\(event.target)"])
            return false
        }
        let body = Array(event.payload.utf8)
        let client = connections[event.target] ?? HTTPConnection(url: target.url, timeout: Double(sendTimeoutMillis) / 1000, limit: 64 * 1024)
        connections[event.target] = client
        do throws(HTTPClientError) {
            let response = try client.send("POST", target.url.basePath.isEmpty ? "/" : "", headers: Self.headers(event, body: body, secret: target.secret), body: body)
            if (200..<300).contains(response.status) { return true }
            logger.info("A webhook refused an event", metadata: ["target": "\(event.target)", "status": "\(response.status)"])
        } catch {
            logger.info("A webhook could not be reached", metadata: ["target": "\(event.target)", "error": "\(error)"])
        }
        return false
    }

    /// Standard Webhooks' headers: `webhook-id`, `webhook-timestamp` and, with a secret,
    /// `webhook-signature: v1,BASE64(HMAC-SHA256(secret, "id.timestamp.body"))`.
    static func headers(_ event: OutboxEvent, body: [UInt8], secret: [UInt8]?,
                        now: Int64 = Int64(Date().timeIntervalSince1970)) -> [(String, String)] {
        let id = "evt_\(event.id)"
        var headers = [("Content-Type", "application/json"), ("User-Agent", "blobd/\(blobdVersion)"),
                       ("webhook-id", id), ("webhook-timestamp", String(now))]
        if let secret {
            let signature = hmacSHA256(key: secret, Array("\(id).\(now).".utf8) + body)
            headers.append(("webhook-signature", "v1," + Data(signature).base64EncodedString()))
        }
        return headers
    }

    private func reached(_ step: Step) {
        if step == crashAt { kill(getpid(), SIGKILL) }
    }
}

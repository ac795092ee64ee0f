import BlobCatalog
import BlobStore
import Foundation
import Logging
import Synchronization
import Observability
import OutboundHTTP
import Services

/// The delivery loop of one node (DESIGN.md §6): on a thread of its own, it claims due events
/// from the outbox with a lease, POSTs each to its webhook with a stable `webhook-id` (the
/// event's id), deletes it on a 2xx, and otherwise retries with exponential backoff (capped at
/// 5 minutes) until `--notify-retention`, then drops it with a warning and a metric. The outbox
/// hands out only the oldest event of each (target, key), so a key's events arrive in order.
/// A node that dies leaves leases that run out; another node then takes the events over.
/// Nothing here runs on a request's or a commit's path.
public final class EventDelivery: Service {
    /// Where a test may SIGKILL the process (`BLOBD_TEST_EVENT_CRASH_AT`).
    public enum Step: String, Sendable {
        /// Events are claimed, none sent.
        case afterClaim = "after-claim"
        /// The receiver acknowledged an event, which is not deleted yet.
        case afterSend = "after-send"
    }

    /// How a test runs the loop faster, or stops it at a step; the defaults are production's.
    public struct Tuning: Sendable {
        /// Where to SIGKILL the process (`BLOBD_TEST_EVENT_CRASH_AT`).
        public var crashAt: Step?
        /// Seconds of the first retry's wait (then doubling); 1 by default.
        public var firstBackoff: Double?
        /// Seconds of a claim's lease; 30 by default.
        public var lease: Double?

        public init(crashAt: Step? = nil, firstBackoff: Double? = nil, lease: Double? = nil) {
            self.crashAt = crashAt
            self.firstBackoff = firstBackoff
            self.lease = lease
        }
    }

    public let name = "blobd-events"
    private let outbox: any EventOutbox
    /// Where the loop's calls to the outbox run (`inCatalogThread`), at the requests' priority.
    private let catalogThread = BlockingPool(name: "blobd-events-catalog", threads: 1)
    private let targets: [String: WebhookTarget]
    private let node: String
    private let retentionMillis: Int64
    private let metrics: EventMetrics
    private let logger: Logger
    private let clock: WallClock
    private let userAgent: String
    private let stopping = Atomic<Bool>(false)
    private let running = Atomic<Bool>(false)
    private let ended = DispatchSemaphore(value: 0)
    private let crashAt: Step?
    private let firstBackoffMillis: Int64
    private let leaseMillis: Int64
    /// Milliseconds to connect, and again for the answer: 10 s, or a third of a shorter lease.
    private let sendTimeoutMillis: Int64
    static let maximumBackoffMillis: Int64 = 300_000
    static let batch = 256

    /// Delivers the events of `outbox` to `targets` as node `node`, dropping those older than
    /// `retention` seconds; `version` goes into the User-Agent.
    public init(outbox: any EventOutbox, targets: [String: WebhookTarget], node: String, retention: Int, metrics: EventMetrics,
                logger: Logger, version: String, clock: WallClock = .system, tuning: Tuning = Tuning()) {
        self.clock = clock
        userAgent = "blobd/\(version)" 
        self.outbox = outbox
        self.targets = targets
        self.node = node
        self.retentionMillis = Int64(retention) * 1000
        self.metrics = metrics
        self.logger = logger
        crashAt = tuning.crashAt
        firstBackoffMillis = Self.millis(tuning.firstBackoff, default: 1)
        leaseMillis = Self.millis(tuning.lease, default: 30)
        sendTimeoutMillis = min(10_000, leaseMillis / 3)
        metrics.configure(targets: Array(targets.keys))
    }

    /// Starts the loop on its own thread; it runs until `stop`.
    public func start() {
        running.store(true, ordering: .releasing)
        let thread = Thread { [self] in
            defer { ended.signal() }
            // Below the request and commit threads: deliveries take what CPU they leave (on Linux
            // the nice value is per thread, and 0 names the calling one).
            setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)
            var lastStats: Int64 = 0
            // One kept-alive connection per webhook, owned by this thread.
            var connections: [String: HTTPConnection] = [:]
            var lastKeys = Set<EventKey>()
            while !stopping.load(ordering: .acquiring) {
                let now = clock.milliseconds
                if now - lastStats >= 1000 {
                    lastStats = now
                    if let stats = try? inCatalogThread({ [outbox] () throws(StoreError) in try outbox.eventQueueStats() }) {
                        metrics.queue(stats)
                    }
                }
                let keys: Set<EventKey>
                do throws(StoreError) {
                    keys = try round(now: now, connections: &connections)
                } catch {
                    logger.warning("Cannot read the event outbox; retrying", metadata: ["error": "\(error)"])
                    keys = []
                }
                if keys.isEmpty {
                    usleep(100_000)
                } else if keys.count < Self.batch, keys.isDisjoint(with: lastKeys) {
                    usleep(Self.gatherMicros)
                }
                lastKeys = keys
            }
        }
        thread.name = "blobd-events"
        thread.start()
    }

    /// Ends the loop after the round in progress (its sends are bounded by their timeouts and
    /// the lease) and waits for its thread; what was claimed and not sent waits for its lease.
    public func stop(before deadline: ContinuousClock.Instant) {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        stopping.store(true, ordering: .releasing)
        ended.wait()
        catalogThread.shutdown()
    }

    /// What a round decided, written back in two transactions when it ends.
    private struct Outcome {
        /// Delivered (or dropped): deleted. The round holds one event per (target, key), so no
        /// later event of a key can go out before its predecessor is deleted.
        var done: [Int64] = []
        /// Released for another attempt (until then this node's lease keeps them).
        var retries: [EventRetry] = []
        /// After one failure a target is not tried again in this round: its other events wait as long.
        var waiting: [String: Int64] = [:]
    }

    /// After a round that was not full, the loop waits this long before it claims again, so
    /// that while writes stream in a round carries all that came meanwhile: a round costs a
    /// claim and a deletion (SQLite's one writer, which every commit waits for), each a trip to
    /// the catalog thread, whatever its size. An event waits at most this much longer. A round
    /// that sent a key the round before sent too goes on at once: that key's events go one per
    /// round (each waits for its predecessor's answer), and a chain of them must not wait each.
    static let gatherMicros: useconds_t = 40_000

    /// Claims and sends one batch; the (target, key) of each event claimed.
    private func round(now: Int64, connections: inout [String: HTTPConnection]) throws(StoreError) -> Set<EventKey> {
        // Claims, deletions and retries are bookkeeping: one write each per round, whatever the batch.
        let claimed = try inCatalogThread { [outbox, node, leaseMillis] () throws(StoreError) in
            try outbox.claimEvents(node: node, now: now, leaseUntil: now + leaseMillis, limit: Self.batch)
        }
        guard !claimed.isEmpty else { return [] }
        reached(.afterClaim)
        var outcome = Outcome()
        defer { write(outcome) }
        // Events are referred to by their place in `claimed`: each copy of one retains its every text.
        var byTarget: [(target: String, events: [Int])] = []
        for index in claimed.indices {
            let target = claimed[index].target
            if now - claimed[index].created > retentionMillis {
                logger.warning("An event was not delivered within --notify-retention; dropped",
                               metadata: ["event.id": "\(claimed[index].id)", "target": "\(target)", "event": "\(claimed[index].event)",
                                          "attempts": "\(claimed[index].attempts)"])
                outcome.done.append(claimed[index].id)
                metrics.dropped(target)
            } else if let place = byTarget.firstIndex(where: { $0.target == target }) {
                byTarget[place].events.append(index)
            } else {
                byTarget.append((target, [index]))
            }
        }
        let leaseUntil = now + leaseMillis
        for (target, events) in byTarget {
            var rest = events[...]
            while !rest.isEmpty {
                if let until = outcome.waiting[target] {
                    outcome.retries += rest.map { EventRetry(id: claimed[$0].id, attempts: claimed[$0].attempts, nextAttempt: until) }
                    break
                }
                // Answers may take the whole timeout: a pipeline that could outlive the lease
                // waits for the next round, so that no other node takes its events in flight.
                if clock.milliseconds + sendTimeoutMillis + leaseMillis / 10 >= leaseUntil {
                    outcome.retries += rest.map { EventRetry(id: claimed[$0].id, attempts: claimed[$0].attempts, nextAttempt: claimed[$0].nextAttempt) }
                    break
                }
                let pipeline = rest.prefix(Self.pipelineDepth)
                rest = rest.dropFirst(pipeline.count)
                deliver(pipeline, of: claimed, to: target, before: leaseUntil - leaseMillis / 10, connections: &connections, outcome: &outcome)
            }
        }
        return Set(claimed.map(\.orderKey))
    }

    /// Events sent together on a webhook's kept connection (HTTP/1.1 pipelining): one write
    /// and a few reads for all of them. Each is one POST with its own `webhook-id`, as alone.
    static let pipelineDepth = 32

    /// POSTs the events at `places` in `events` to `target` together, and notes each one's
    /// outcome: delivered on a 2xx, else retried after a backoff.
    private func deliver(_ places: ArraySlice<Int>, of events: [OutboxEvent], to name: String, before leaseEnd: Int64,
                         connections: inout [String: HTTPConnection], outcome: inout Outcome) {
        let results: [Result<HTTPClientResponse, HTTPClientError>]
        if let target = targets[name] {
            let connection = connections[name] ?? HTTPConnection(url: target.url, timeout: Double(sendTimeoutMillis) / 1000, limit: 64 * 1024)
            connections[name] = connection
            // Read in place: `events[place].payloadBytes` copies the event (each of its texts) first.
            let requests = events.withUnsafeBufferPointer { events in
                places.map { place in
                    let body = events[place].payloadBytes
                    return HTTPConnection.Request("POST", target.url.basePath.isEmpty ? "/" : "",
                                                  headers: headers(eventID: events[place].id, body: body, secret: target.secret), body: body)
                }
            }
            results = connection.pipeline(requests, until: ContinuousClock.now + .milliseconds(max(0, leaseEnd - clock.milliseconds)))
        } else {
            logger.warning("An event names a target this node does not have (--notify-webhook)", metadata: ["target": "\(name)"])
            results = places.map { _ in .failure(.closedEarly) }
        }
        var sent = false, logged = false
        for (place, result) in zip(places, results) {
            if case .success(let response) = result, (200..<300).contains(response.status) {
                sent = true
                outcome.done.append(events[place].id)
                metrics.delivered(name)
                continue
            }
            if !logged {
                logged = true
                switch result {
                case .success(let response): logger.info("A webhook refused an event", metadata: ["target": "\(name)", "status": "\(response.status)"])
                case .failure(let error): logger.info("A webhook could not be reached", metadata: ["target": "\(name)", "error": "\(error)"])
                }
            }
            metrics.failed(name)
            let attempts = events[place].attempts + 1
            let next = clock.milliseconds + backoff(attempts: attempts)
            outcome.retries.append(EventRetry(id: events[place].id, attempts: attempts, nextAttempt: next))
            outcome.waiting[name] = min(outcome.waiting[name] ?? next, next)
        }
        if sent { reached(.afterSend) }
    }

    /// Deletes what a round delivered and releases what it retries (each a trip to the catalog
    /// thread, when there is any).
    private func write(_ outcome: Outcome) {
        if !outcome.done.isEmpty {
            do throws(StoreError) { try inCatalogThread { [outbox] () throws(StoreError) in try outbox.removeEvents(outcome.done) } } catch {
                logger.warning("Delivered events could not be deleted; they will be sent again", metadata: ["error": "\(error)"])
            }
        }
        if !outcome.retries.isEmpty {
            do throws(StoreError) { try inCatalogThread { [outbox] () throws(StoreError) in try outbox.retryEvents(outcome.retries) } } catch {
                logger.warning("Events to retry could not be released; they wait for their lease", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Runs `body` on `catalogThread` and waits for it. The loop's thread runs at nice 10, and
    /// while the requests' threads keep it from the CPU it must not hold what they wait for: the
    /// catalog's writer (SQLite has one) or a reader connection.
    private func inCatalogThread<T: Sendable>(_ body: @escaping @Sendable () throws(StoreError) -> T) throws(StoreError) -> T {
        let result = Mutex<Result<T, StoreError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        catalogThread.submit {
            let outcome: Result<T, StoreError>
            do throws(StoreError) { outcome = .success(try body()) } catch { outcome = .failure(error) }
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        guard let outcome = result.withLock({ $0 }) else { throw .index(.failed("the outbox call gave no answer")) }
        return try outcome.get()
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

    /// Standard Webhooks' headers: `webhook-id`, `webhook-timestamp` and, with a secret,
    /// `webhook-signature: v1,BASE64(HMAC-SHA256(secret, "id.timestamp.body"))`.
    func headers(eventID: Int64, body: [UInt8], secret: [UInt8]?) -> [(String, String)] {
        Self.headers(eventID: eventID, body: body, secret: secret, now: clock.seconds, userAgent: userAgent)
    }

    /// The headers of one delivery at `now` (seconds since the epoch).
    static func headers(eventID: Int64, body: [UInt8], secret: [UInt8]?, now: Int64, userAgent: String) -> [(String, String)] {
        let id = "evt_\(eventID)"
        var headers = [("Content-Type", "application/json"), ("User-Agent", userAgent), ("webhook-id", id), ("webhook-timestamp", String(now))]
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

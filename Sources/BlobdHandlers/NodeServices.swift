import BlobStore
import MicroHTTPD
import Services
import Synchronization

/// A listener as a service: it binds on `start` and drains on `stop`, until the deadline.
final class Listener: Service {
    let name: String
    private let configuration: HTTPServerConfiguration
    private let handler: any HTTPHandler
    private let server = Mutex<HTTPServer?>(nil)

    init(_ name: String, _ configuration: HTTPServerConfiguration, handler: any HTTPHandler) {
        self.name = name
        self.configuration = configuration
        self.handler = handler
    }

    func start() throws {
        let started = try HTTPServer(configuration: configuration, handler: handler)
        server.withLock { $0 = started }
    }

    /// Stops accepting new connections (both listeners at once, see `Quiesce`).
    func quiesce() {
        server.withLock { $0 }?.quiesce()
    }

    func stop(before deadline: ContinuousClock.Instant) {
        server.withLock { $0 }?.shutdown(grace: secondsLeft(until: deadline))
    }

    var port: UInt16? { server.withLock { $0?.port } }

    var requestsInFlight: Int { server.withLock { $0?.requestsInFlight } ?? 0 }
}

/// Stopped first: both listeners stop accepting at once, then each drains in turn.
final class Quiesce: Service {
    let name = "blobd-quiesce"
    private let listeners: [Listener]

    init(_ listeners: [Listener]) {
        self.listeners = listeners
    }

    func start() {}

    func stop(before deadline: ContinuousClock.Instant) {
        for listener in listeners { listener.quiesce() }
    }
}

/// A pool (started with its service) whose work, on stop, finishes before the deadline. A
/// commit pool's commits that do not are unacknowledged, and recovery undoes them at the next
/// start; a restamp that does not leaves stamps the expiry sweep checks again.
final class PoolDrain: Service {
    let name: String
    private let pool: BlockingPool
    private let abandoned = Atomic<Bool>(false)

    init(_ pool: BlockingPool, name: String = "blobd-commit-pool") {
        self.pool = pool
        self.name = name
    }

    func start() {}

    func stop(before deadline: ContinuousClock.Instant) {
        if !pool.shutdown(waitingAtMost: secondsLeft(until: deadline)) { abandoned.store(true, ordering: .relaxed) }
    }

    /// Whether work was still running when the deadline passed.
    var abandonedCommits: Bool { abandoned.load(ordering: .relaxed) }
}

/// Stopped after everything that writes: marks the store stopped cleanly, so that the next
/// start skips the scan for orphans.
final class CleanStop: Service {
    let name = "blobd-clean-stop"
    private let store: BlobStore

    init(_ store: BlobStore) {
        self.store = store
    }

    func start() {}

    func stop(before deadline: ContinuousClock.Instant) {
        store.markStoppedCleanly()
    }
}

/// Seconds from now until `deadline`, 0 once it has passed.
func secondsLeft(until deadline: ContinuousClock.Instant) -> Double {
    let left = ContinuousClock.now.duration(to: deadline)
    return max(0, Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18)
}

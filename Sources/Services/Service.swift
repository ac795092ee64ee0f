import Synchronization

/// Something blobd runs for as long as it serves: a listener, a sweep, a poll, a delivery loop.
/// `start` returns once it runs; `stop` returns once every thread it started has ended (or, for
/// a pool, once what it was given has finished or the deadline passed).
public protocol Service: AnyObject, Sendable {
    /// Its name, for the log.
    var name: String { get }
    /// Starts it; throws if it cannot run.
    func start() throws
    /// Stops it and waits until its threads have ended, at most until `deadline` where it
    /// waits for work in flight (a listener's requests, a pool's commits).
    func stop(before deadline: ContinuousClock.Instant)
}

/// The services of one node, started in the order they were added and stopped in reverse, so
/// that each stops before what it uses: the listeners first, the key poll and the log last.
public final class ServiceGroup: Sendable {
    private let services = Mutex<[any Service]>([])
    private let started = Mutex<[any Service]>([])

    public init() {}

    /// Adds `service`, to start after those added before it.
    public func add(_ service: any Service) {
        services.withLock { $0.append(service) }
    }

    /// Starts every service in order. If one cannot start, those already started are stopped
    /// (in reverse) and its error is thrown.
    public func start() throws {
        for service in services.withLock({ $0 }) {
            do {
                try service.start()
            } catch {
                stop(before: .now)
                throw error
            }
            started.withLock { $0.append(service) }
        }
    }

    /// Stops the started services in reverse order; each may wait until `deadline`.
    public func stop(before deadline: ContinuousClock.Instant) {
        let running = started.withLock { started in
            defer { started.removeAll() }
            return started
        }
        for service in running.reversed() { service.stop(before: deadline) }
    }

    /// The names of the services, in start order.
    public var names: [String] { services.withLock { $0.map(\.name) } }
}

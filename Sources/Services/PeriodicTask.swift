import Foundation
import Synchronization

/// A service that runs `body` on a thread of its own now and then every `interval` seconds
/// until stopped; `stop` wakes it at once and waits for the run in progress to end.
public final class PeriodicTask: Service {
    public let name: String
    private let interval: Double
    private let runsAtStart: Bool
    private let body: @Sendable () -> Void
    private let stopping = Mutex(false)
    private let wake = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)
    private let running = Mutex(false)

    /// `body` every `interval` seconds; at once on start too, unless `runsAtStart` is false.
    public init(_ name: String, every interval: Double, runsAtStart: Bool = true, _ body: @escaping @Sendable () -> Void) {
        self.name = name
        self.interval = interval
        self.runsAtStart = runsAtStart
        self.body = body
    }

    public func start() {
        running.withLock { $0 = true }
        let thread = Thread { [self] in
            defer { ended.signal() }
            var first = runsAtStart
            while !stopping.withLock({ $0 }) {
                if !first {
                    _ = wake.wait(timeout: .now() + interval)
                    if stopping.withLock({ $0 }) { break }
                }
                first = false
                body()
            }
        }
        thread.name = name
        thread.start()
    }

    public func stop(before deadline: ContinuousClock.Instant) {
        guard running.withLock({ $0 }) else { return }
        stopping.withLock { $0 = true }
        wake.signal()
        // The run in progress ends whatever the deadline: a sweep's batch is bounded.
        ended.wait()
        running.withLock { $0 = false }
    }
}

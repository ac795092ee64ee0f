#if canImport(Glibc)
import Glibc
#endif
import BlobCore
import Synchronization

/// The event queue's samples on `/metrics`: pending events and the oldest one's age per target
/// (as the delivery loop last read them from the catalog, about once a second), deliveries,
/// failed attempts and events dropped past `--notify-retention`.
public final class EventMetrics: Sendable {
    private struct State {
        var targets: [String] = []
        var pending: [String: (count: Int, oldest: Int64)] = [:]
        var deliveries: [String: UInt64] = [:]
        var failures: [String: UInt64] = [:]
        var dropped: [String: UInt64] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    /// The configured targets: each has samples, even at zero.
    public func configure(targets: [String]) {
        state.withLock { $0.targets = targets.sorted() }
    }

    /// The queue as the catalog last showed it (oldest: milliseconds since the epoch).
    public func queue(_ stats: [String: (count: Int, oldest: Int64)]) {
        state.withLock { $0.pending = stats }
    }

    public func delivered(_ target: String) { state.withLock { $0.deliveries[target, default: 0] += 1 } }
    public func failed(_ target: String) { state.withLock { $0.failures[target, default: 0] += 1 } }
    public func dropped(_ target: String) { state.withLock { $0.dropped[target, default: 0] += 1 } }

    /// The exposition text (nothing without targets).
    func render(nowMillis: Int64 = WallClock.system.milliseconds) -> String {
        let state = state.withLock { $0 }
        guard !state.targets.isEmpty else { return "" }
        var out = ""
        func family(_ name: String, _ type: String, _ help: String, _ value: (String) -> String) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
            for target in state.targets { out += "\(name){target=\"\(Metrics.labelValue(target))\"} \(value(target))\n" }
        }
        family("blobd_events_pending", "gauge", "Events waiting for delivery, by target.") { String(state.pending[$0]?.count ?? 0) }
        family("blobd_events_oldest_age_seconds", "gauge", "Age of the oldest event waiting, by target.") { target in
            guard let oldest = state.pending[target]?.oldest else { return "0" }
            return String(Double(max(0, nowMillis - oldest)) / 1000)
        }
        family("blobd_event_deliveries_total", "counter", "Events delivered (2xx), by target.") { String(state.deliveries[$0] ?? 0) }
        family("blobd_event_delivery_failures_total", "counter", "Failed delivery attempts, by target.") { String(state.failures[$0] ?? 0) }
        family("blobd_events_dropped_total", "counter", "Events dropped past --notify-retention, by target.") { String(state.dropped[$0] ?? 0) }
        return out
    }
}

#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Where blobd reads the time of day: deadlines, leases, expiry, retention, `Last-Modified`.
/// Production reads the system clock (`.system`); a test hands in a `ManualClock`'s, and moves
/// it on instead of sleeping or running under faketime. Durations that only time a wait
/// (timeouts, back-off) use the monotonic clock and are not read here.
public struct WallClock: Sendable {
    private let read: @Sendable () -> Int64

    /// A clock that answers `milliseconds()` (since the epoch) when asked.
    public init(milliseconds: @escaping @Sendable () -> Int64) {
        read = milliseconds
    }

    /// The system's real-time clock.
    public static let system = WallClock {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) &* 1000 &+ Int64(now.tv_nsec / 1_000_000)
    }

    /// Milliseconds since the epoch.
    public var milliseconds: Int64 { read() }

    /// Whole seconds since the epoch (rounded down).
    public var seconds: Int64 {
        let ms = read()
        return ms >= 0 ? ms / 1000 : (ms - 999) / 1000
    }
}

/// A clock that stands still until a test moves it.
public final class ManualClock: Sendable {
    private let now: Mutex<Int64>

    /// Starts at `milliseconds` since the epoch (by default, the system clock's now).
    public init(milliseconds: Int64 = WallClock.system.milliseconds) {
        now = Mutex(milliseconds)
    }

    /// The clock to hand to what is tested.
    public var clock: WallClock { WallClock { [self] in now.withLock { $0 } } }

    /// Moves the clock on by `seconds` (or back, when negative).
    public func advance(seconds: Int64) {
        now.withLock { $0 &+= seconds &* 1000 }
    }

    /// Moves the clock on by `milliseconds`.
    public func advance(milliseconds: Int64) {
        now.withLock { $0 &+= milliseconds }
    }
}

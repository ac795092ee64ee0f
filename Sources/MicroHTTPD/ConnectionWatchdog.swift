import CMicroHTTPD
import Synchronization

import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// What a connection is doing, as the watchdog sees it.
enum ConnectionPhase: UInt64 {
    /// Waiting for a request head (from the connection's start, or the end of the last request).
    case head = 0
    /// Receiving a request body.
    case body = 1
    /// Anything else: waiting for the handler, or sending a response.
    case other = 2
}

/// One open connection. Its worker thread moves it between phases; the watchdog only reads.
final class WatchedConnection: Sendable {
    let descriptor: Int32
    /// The phase in the low two bits, the phase's start (monotonic milliseconds) above them:
    /// one word, so the watchdog never reads a phase with another phase's start.
    private let stamp = Atomic<UInt64>(0)
    /// Bytes of the current request's body received so far.
    let bodyBytes = Atomic<UInt64>(0)
    /// Milliseconds blobd itself spent taking the body in (writing it out), which the rate
    /// leaves out: a disk that stalls must not make the client look slow.
    let bodyBusy = Atomic<UInt64>(0)
    /// The request line of the next request has arrived (only tells `idle` from `head`).
    let requestLineSeen = Atomic<Bool>(false)

    init(descriptor: Int32) {
        self.descriptor = descriptor
        enter(.head)
    }

    /// Enters `phase` now; a body starts its count at 0, visible to a watchdog that sees the
    /// new phase (release, then acquire in `phase`).
    func enter(_ phase: ConnectionPhase) {
        if phase == .body {
            bodyBytes.store(0, ordering: .relaxed)
            bodyBusy.store(0, ordering: .relaxed)
        }
        stamp.store(monotonicMilliseconds() << 2 | phase.rawValue, ordering: .releasing)
    }

    var phase: (phase: ConnectionPhase, since: UInt64, stamp: UInt64) {
        let value = stamp.load(ordering: .acquiring)
        return (ConnectionPhase(rawValue: value & 3) ?? .other, value >> 2, value)
    }
}

/// Closes connections of slow clients (slowloris): a request head not complete within
/// `headerTimeout` seconds of the connection's start or of the end of its last request (so an
/// idle keep-alive connection is closed then too), and a body that brings fewer than
/// `minBodyRate` bytes per second over any period of `window` seconds.
///
/// A connection is closed with shutdown(2): libmicrohttpd then sees the end of the stream and
/// closes it as if the client had hung up. The watchdog calls shutdown only under `lock`, and
/// the connection leaves the table under the same lock in libmicrohttpd's CLOSED notification,
/// which comes before libmicrohttpd closes the descriptor: so the descriptor is never one that
/// has been reused for another connection.
final class ConnectionWatchdog: @unchecked Sendable {
    struct Limits: Sendable {
        var headerTimeout: Double
        var minBodyRate: Int
        var window: Double { headerTimeout > 0 ? headerTimeout : 10 }
    }

    private struct Entry {
        let connection: WatchedConnection
        /// The phase stamp the rate window belongs to, its start (ms) and the bytes then.
        var windowStamp: UInt64 = .max
        var windowStart: UInt64 = 0
        var windowBytes: UInt64 = 0
        var windowBusy: UInt64 = 0
        var cut = false
    }

    private let limits: Limits
    private let table = Mutex<[ObjectIdentifier: Entry]>([:])
    private let report: (@Sendable (String) -> Void)?
    private let stopping = Atomic<Bool>(false)
    private var thread = pthread_t()

    /// Starts the watchdog thread; `report` is told why each connection it closes was closed.
    init(limits: Limits, report: (@Sendable (String) -> Void)?) {
        self.limits = limits
        self.report = report
        let retained = Unmanaged.passRetained(self).toOpaque()
        let started = pthread_create(&thread, nil, { argument in
            guard let argument else { return nil }
            Unmanaged<ConnectionWatchdog>.fromOpaque(argument).takeRetainedValue().run()
            return nil
        }, retained)
        if started != 0 {
            Unmanaged<ConnectionWatchdog>.fromOpaque(retained).release()
            stopping.store(true, ordering: .relaxed)
        }
    }

    func add(_ connection: WatchedConnection) {
        table.withLock { $0[ObjectIdentifier(connection)] = Entry(connection: connection) }
    }

    func remove(_ connection: WatchedConnection) {
        _ = table.withLock { $0.removeValue(forKey: ObjectIdentifier(connection)) }
    }

    /// Stops the thread and waits for it.
    func stop() {
        guard !stopping.exchange(true, ordering: .relaxed) else { return }
        pthread_join(thread, nil)
    }

    private func run() {
        while !stopping.load(ordering: .relaxed) {
            usleep(100_000)
            check(now: monotonicMilliseconds())
        }
    }

    /// Closes the connections that are too slow. Each is counted before its socket is shut
    /// down, so a client that sees the close finds it counted.
    private func check(now: UInt64) {
        table.withLock { table in
            for (id, var entry) in table where !entry.cut {
                guard tooSlow(&entry, now: now) else {
                    table[id] = entry
                    continue
                }
                entry.cut = true
                table[id] = entry
                let phase = entry.connection.phase.phase
                report?(phase == .body ? "body" : entry.connection.requestLineSeen.load(ordering: .relaxed) ? "head" : "idle")
                _ = SystemCall.run("shutdown") { shutdown(entry.connection.descriptor, Int32(SHUT_RDWR)) }
            }
        }
    }

    /// Milliseconds from `start` to `now`, 0 when a worker stamped `start` after `now` was read
    /// (a wrapped difference would make a connection that just began look ancient).
    static func age(_ start: UInt64, now: UInt64) -> UInt64 {
        now > start ? now - start : 0
    }

    private func tooSlow(_ entry: inout Entry, now: UInt64) -> Bool {
        let (phase, since, stamp) = entry.connection.phase
        switch phase {
        case .head:
            return limits.headerTimeout > 0 && Double(Self.age(since, now: now)) >= limits.headerTimeout * 1000
        case .body:
            guard limits.minBodyRate > 0 else { return false }
            let bytes = entry.connection.bodyBytes.load(ordering: .relaxed)
            let busy = entry.connection.bodyBusy.load(ordering: .relaxed)
            if entry.windowStamp != stamp {
                // The first window of a body starts with the body, at 0 bytes.
                entry.windowStamp = stamp
                entry.windowStart = since
                entry.windowBytes = 0
                entry.windowBusy = 0
            }
            let busyInWindow = busy >= entry.windowBusy ? busy - entry.windowBusy : 0
            let elapsed = Double(Self.age(entry.windowStart, now: now)) / 1000 - Double(busyInWindow) / 1000
            guard elapsed >= limits.window else { return false }
            let received = bytes >= entry.windowBytes ? bytes - entry.windowBytes : bytes
            if Double(received) < Double(limits.minBodyRate) * elapsed { return true }
            entry.windowStart = now
            entry.windowBytes = bytes
            entry.windowBusy = busy
            return false
        case .other:
            return false
        }
    }
}

/// libmicrohttpd's connection notification: a connection opened or closed.
let connectionNotified: MHD_NotifyConnectionCallback = { cls, connection, socketContext, code in
    guard let cls, let socketContext else { return }
    let server = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    guard let watchdog = server.watchdog else { return }
    switch code {
    case .CONNECTION_NOTIFY_STARTED:
        guard let connection else { return }
        let watched = WatchedConnection(descriptor: blobd_mhd_connection_fd(connection))
        watchdog.add(watched)
        socketContext.pointee = Unmanaged.passRetained(watched).toOpaque()
    case .CONNECTION_NOTIFY_CLOSED:
        guard let pointer = socketContext.pointee else { return }
        socketContext.pointee = nil
        let watched = Unmanaged<WatchedConnection>.fromOpaque(pointer).takeRetainedValue()
        watchdog.remove(watched)
    default:
        return
    }
}

/// The watched connection of a libmicrohttpd connection, if the watchdog runs.
func watchedConnection(_ connection: OpaquePointer) -> WatchedConnection? {
    blobd_mhd_socket_context(connection).map { Unmanaged<WatchedConnection>.fromOpaque($0).takeUnretainedValue() }
}

/// Milliseconds on the monotonic clock.
func monotonicMilliseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(max(0, now.tv_sec)) &* 1000 &+ UInt64(max(0, now.tv_nsec)) / 1_000_000
}

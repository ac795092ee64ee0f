import CMicroHTTPD
import Synchronization

import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// How the server listens and how many resources it may use.
public struct HTTPServerConfiguration: Sendable {
    /// IPv4 or IPv6 literal to bind to.
    public var host: String
    /// Port to bind to; 0 picks a free one.
    public var port: UInt16
    /// Worker threads; each serves its own connections.
    public var threads: Int
    /// Seconds an idle or stalled connection may live; 0 for no limit.
    public var connectionTimeout: Int
    /// Connections served at once; beyond this, new connections are refused.
    public var maxConnections: Int
    /// Bytes per connection for the request head and I/O buffers (bounds header size).
    public var connectionMemory: Int
    /// Seconds a request head may take, from the connection's start or the end of its last
    /// request (so also the keep-alive idle limit); 0 for no limit.
    public var headerTimeout: Double
    /// Bytes per second a request body must bring, over each `headerTimeout` period (10 s if
    /// that is 0); 0 for no limit.
    public var minBodyRate: Int
    /// Connections one client address may hold at once; 0 for no limit.
    public var maxConnectionsPerAddress: Int
    /// Told of each connection closed for a slow client, with the reason: `idle` (a keep-alive
    /// connection with no new request by the head deadline), `head` or `body`.
    public var slowClientClosed: (@Sendable (String) -> Void)?

    /// Creates a configuration.
    public init(host: String, port: UInt16, threads: Int, connectionTimeout: Int = 60,
                maxConnections: Int = 1024, connectionMemory: Int = 32 * 1024,
                headerTimeout: Double = 0, minBodyRate: Int = 0, maxConnectionsPerAddress: Int = 0,
                slowClientClosed: (@Sendable (String) -> Void)? = nil) {
        self.host = host
        self.port = port
        self.threads = threads
        self.connectionTimeout = connectionTimeout
        self.maxConnections = maxConnections
        self.connectionMemory = connectionMemory
        self.headerTimeout = headerTimeout
        self.minBodyRate = minBodyRate
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
        self.slowClientClosed = slowClientClosed
    }
}

/// Why the server could not start.
public enum HTTPServerError: Error, Equatable, CustomStringConvertible {
    /// The host is not an IP address literal.
    case invalidAddress(String)
    /// libmicrohttpd could not start (port taken, no permission, ...).
    case startFailed(host: String, port: UInt16)

    public var description: String {
        switch self {
        case .invalidAddress(let host): "not an IP address: \(host)"
        case .startFailed(let host, let port): "cannot listen on \(host):\(port) (address in use or not permitted)"
        }
    }
}

/// An HTTP/1.1 server on libmicrohttpd: a polling thread plus a pool of worker threads.
///
/// `@unchecked Sendable` is sound: the daemon pointer is set once in `init`, and libmicrohttpd's
/// quiesce/stop/info calls are safe from any thread; `stopped` guards the single stop.
public final class HTTPServer: @unchecked Sendable {
    private let daemon: OpaquePointer
    private let context: Unmanaged<ServerContext>
    private let stopped = Mutex(false)
    private let listenSocket = Mutex<Int32>(-1)

    /// The port the server is bound to.
    public let port: UInt16

    /// Starts serving `handler` at once.
    public init(configuration: HTTPServerConfiguration, handler: any HTTPHandler) throws {
        let limits = ConnectionWatchdog.Limits(headerTimeout: max(0, configuration.headerTimeout),
                                               minBodyRate: max(0, configuration.minBodyRate))
        let watchdog = limits.headerTimeout > 0 || limits.minBodyRate > 0 ? ConnectionWatchdog(limits: limits, report: configuration.slowClientClosed) : nil
        let context = Unmanaged.passRetained(ServerContext(handler: handler, watchdog: watchdog))
        var flags = MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_EPOLL.rawValue
            | MHD_USE_ITC.rawValue | MHD_USE_TURBO.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
        let started: OpaquePointer? = try withSocketAddress(configuration.host, configuration.port) { address, isIPv6 in
            if isIPv6 { flags |= MHD_USE_IPv6.rawValue }
            return blobd_mhd_start(
                flags, address,
                accessHandler, context.toOpaque(),
                requestCompleted, context.toOpaque(),
                requestStarted, context.toOpaque(),
                UInt32(max(1, configuration.threads)),
                UInt32(max(0, configuration.connectionTimeout)),
                UInt32(max(1, configuration.maxConnections)),
                max(8 * 1024, configuration.connectionMemory),
                UInt32(clamping: max(0, configuration.maxConnectionsPerAddress)),
                connectionNotified, context.toOpaque())
        }
        guard let started else {
            watchdog?.stop()
            context.release()
            throw HTTPServerError.startFailed(host: configuration.host, port: configuration.port)
        }
        self.daemon = started
        self.context = context
        self.port = blobd_mhd_bound_port(started)
    }

    /// Requests whose head has arrived and that are not complete yet.
    public var requestsInFlight: Int { context.takeUnretainedValue().inFlight.load(ordering: .relaxed) }

    /// Stops accepting new connections; connections already open are still served.
    public func quiesce() {
        listenSocket.withLock { socket in
            guard socket < 0 else { return }
            socket = MHD_quiesce_daemon(daemon)
        }
    }

    /// Stops accepting, waits up to `grace` seconds for requests in flight, answers those still
    /// waiting for a response with the handler's `shutdownResponse()` (and waits up to 2 s more
    /// for those answers to go out), then closes every connection and joins the worker threads.
    /// No connection is left suspended when libmicrohttpd stops (its API forbids it).
    public func shutdown(grace: Double) {
        quiesce()
        waitForRequestsInFlight(seconds: grace)
        answerWaitingRequests()
        waitForRequestsInFlight(seconds: 2)
        stop()
    }

    /// Waits until no request is in flight, `seconds` at most.
    private func waitForRequestsInFlight(seconds: Double) {
        let deadline = monotonicSeconds() + seconds
        while requestsInFlight > 0 && monotonicSeconds() < deadline {
            usleep(10_000)
        }
    }

    /// Closes every connection and joins the worker threads. Idempotent.
    public func stop() {
        let first = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        answerWaitingRequests()
        MHD_stop_daemon(daemon)
        context.takeUnretainedValue().watchdog?.stop()
        context.release()
        listenSocket.withLock { socket in
            if socket >= 0 { closeDescriptor(socket) }
        }
    }

    /// Resumes every suspended connection with the handler's `shutdownResponse()`, and keeps any
    /// from being suspended from now on.
    private func answerWaitingRequests() {
        let server = context.takeUnretainedValue()
        for waiting in server.close() {
            waiting.answerShutdown(server.handler.shutdownResponse())
        }
    }

    deinit { stop() }
}

/// Seconds on the monotonic clock.
func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// close(2) through `FileDescriptor` (never retried; EBADF stops the process).
func closeDescriptor(_ descriptor: Int32) {
    FileDescriptor(rawValue: descriptor).close()
}

/// Calls `body` with a sockaddr for an IPv4 or IPv6 literal.
private func withSocketAddress<R>(_ host: String, _ port: UInt16,
                                  _ body: (UnsafePointer<sockaddr>, Bool) -> R) throws -> R {
    var v4 = sockaddr_in()
    if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
        v4.sin_family = sa_family_t(AF_INET)
        v4.sin_port = port.bigEndian
        return withUnsafePointer(to: &v4) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, false) } }
    }
    var v6 = sockaddr_in6()
    let literal = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    if inet_pton(AF_INET6, literal, &v6.sin6_addr) == 1 {
        v6.sin6_family = sa_family_t(AF_INET6)
        v6.sin6_port = port.bigEndian
        return withUnsafePointer(to: &v6) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, true) } }
    }
    throw HTTPServerError.invalidAddress(host)
}

#if canImport(Glibc)
import Glibc
#endif
import SystemCalls

/// An HTTP/1.1 client that keeps its connection open from one request to the next, for a
/// sender of many small requests to one server (the event deliveries POST each event to its
/// webhook). Each request has one deadline, from connecting (when it must; twice at most) to
/// the answer's last byte. One owner at a time: it is not safe to share between threads.
///
/// A kept connection the server has closed meanwhile is seen before sending (it reads as ready)
/// and replaced. When a request on a kept connection fails before any answer (the server closed
/// it while the request was on its way), it is sent once more on a new connection; a sender
/// that uses this client must therefore tolerate a request received twice, as webhook
/// deliveries do (at least once, with a stable id).
public final class HTTPConnection {
    public let url: ServerURL
    /// Seconds for one request, from connecting or sending to the answer's last byte.
    public let timeout: Double
    /// The largest body read.
    public let limit: Int
    private var socket: FileDescriptor?

    public init(url: ServerURL, timeout: Double, limit: Int = 64 << 20) {
        self.url = url
        self.timeout = timeout
        self.limit = limit
    }

    deinit { socket?.close() }

    /// Whether a connection is open for the next request.
    public var isOpen: Bool { socket != nil }

    /// One request and its answer, within `timeout`: a pipeline of one.
    public func send(_ method: String, _ path: String, headers: [(String, String)], body: [UInt8]?) throws(HTTPClientError) -> HTTPClientResponse {
        let results = pipeline([Request(method, path, headers: headers, body: body)], until: HTTPClient.deadline(after: timeout))
        guard let result = results.first else { throw .closedEarly }
        return try result.get()
    }

    /// One request of a pipeline.
    public struct Request: Sendable {
        public var method: String
        public var path: String
        public var headers: [(String, String)]
        public var body: [UInt8]?

        public init(_ method: String, _ path: String, headers: [(String, String)], body: [UInt8]?) {
            self.method = method
            self.path = path
            self.headers = headers
            self.body = body
        }
    }

    /// Sends `requests` together and reads their answers in order (HTTP/1.1 pipelining, RFC
    /// 9112 §9.3.2): one write and a few reads for all of them, where `send` takes a round trip
    /// each. Each answer must come within `timeout` of the one before, and all before `until`.
    /// Requests go one at a time until the server has answered one in a way that keeps the
    /// connection open. A server that closes the connection after an answer (`Connection:
    /// close`, HTTP/1.0, or without saying) has not taken the requests after it: they go again
    /// on a new connection, one at a time from then on (its kernel may even reset the
    /// connection and lose the answer, when more was sent than it read). Every request
    /// gets a result, in order; after a failure (no answer in time, a malformed answer, a
    /// connection refused) the rest get the same error. A request may thus be received twice,
    /// as with `send`; the caller must tolerate that (RFC 9112 allows pipelining non-idempotent
    /// requests to a client that can detect and recover from a partial failure).
    public func pipeline(_ requests: [Request], until: ContinuousClock.Instant) -> [Result<HTTPClientResponse, HTTPClientError>] {
        var results: [Result<HTTPClientResponse, HTTPClientError>] = []
        while results.count < requests.count {
            let before = results.count
            let wasKept = socket.map { !Self.isClosedByPeer($0) } ?? false
            let depth = oneAtATime ? 1 : requests.count - before
            do throws(HTTPClientError) {
                try pipelineOnce(requests[before..<(before + depth)], until: until, into: &results)
            } catch {
                close()
                let lost: Bool = switch error {
                case .send, .receive, .closedEarly: true
                default: false
                }
                // A server that closes after one answer with more requests unread makes its
                // kernel reset the connection, which may take the answer with it: from now on
                // one at a time. Otherwise only a kept connection, or one that answered
                // something, is worth another: nothing answered on a new one is a failure.
                let retryable = lost && (wasKept || results.count > before || depth > 1)
                if lost && depth > 1 { oneAtATime = true }
                if !retryable {
                    while results.count < requests.count { results.append(.failure(error)) }
                }
            }
        }
        return results
    }

    /// Whether requests go one at a time: until the server has shown that it keeps a
    /// connection open (an HTTP/1.1 answer without `Connection: close`), and again once it
    /// closed one with pipelined requests unanswered.
    private var oneAtATime = true

    /// Sends `batch` on the kept (or a new) connection and appends the answers it gets, until
    /// the server closes the connection after one of them.
    private func pipelineOnce(_ batch: ArraySlice<Request>, until: ContinuousClock.Instant,
                              into results: inout [Result<HTTPClientResponse, HTTPClientError>]) throws(HTTPClientError) {
        let timeout = self.timeout
        func next() -> ContinuousClock.Instant { min(until, HTTPClient.deadline(after: timeout)) }
        if let socket, Self.isClosedByPeer(socket) { close() }
        let connection: FileDescriptor
        if let socket {
            connection = socket
        } else {
            connection = try HTTPClient.connect(url, deadline: next(), timeout: timeout)
            socket = connection
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(batch.reduce(0) { $0 + 512 + ($1.body?.count ?? 0) })
        let authority = url.authority
        for request in batch {
            HTTPClient.appendRequest(request.method, basePath: url.basePath, authority: authority, request.path, headers: request.headers,
                                     body: request.body, to: &bytes)
        }
        try HTTPClient.sendAll(bytes, on: connection, deadline: next(), timeout: timeout)
        var reader = ResponseReader(socket: connection, deadline: next(), timeout: timeout)
        defer { reader.resetLowWater() }
        for (index, request) in zip(batch.indices, batch) {
            reader.answersLeft = batch.endIndex - index
            results.append(.success(try reader.response(isHead: request.method == "HEAD", limit: limit)))
            reader.deadline = next()
            guard reader.lastLeavesOpen else {
                oneAtATime = true
                close()
                return
            }
            oneAtATime = false
        }
        if reader.hasUnreadBytes { close() }
    }

    /// Closes the connection, if one is open; the next request opens another.
    public func close() {
        socket?.close()
        socket = nil
    }

    /// A kept connection that reads as ready before a request was sent: the server closed it
    /// (or sent something no request asked for); either way it cannot carry the next one.
    private static func isClosedByPeer(_ socket: FileDescriptor) -> Bool {
        var entry = pollfd(fd: socket.rawValue, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) != 0
    }
}

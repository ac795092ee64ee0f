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

    public func send(_ method: String, _ path: String, headers: [(String, String)], body: [UInt8]?) throws(HTTPClientError) -> HTTPClientResponse {
        let request = HTTPClient.request(method, url: url, path, headers: headers, body: body)
        let deadline = HTTPClient.deadline(after: timeout)
        if let socket, Self.isClosedByPeer(socket) { close() }
        if let kept = socket {
            do {
                return try exchange(request, on: kept, isHead: method == "HEAD", deadline: deadline)
            } catch .send(_), .receive(_), .closedEarly {
                // The server let the kept connection go while the request was on its way.
            }
        }
        let fresh = try HTTPClient.connect(url, deadline: deadline, timeout: timeout)
        socket = fresh
        return try exchange(request, on: fresh, isHead: method == "HEAD", deadline: deadline)
    }

    /// Closes the connection, if one is open; the next request opens another.
    public func close() {
        socket?.close()
        socket = nil
    }

    /// One request and its answer on `socket`, which is closed afterwards unless the answer
    /// leaves it open for another.
    private func exchange(_ request: [UInt8], on socket: FileDescriptor, isHead: Bool,
                          deadline: ContinuousClock.Instant) throws(HTTPClientError) -> HTTPClientResponse {
        do {
            try HTTPClient.sendAll(request, on: socket, deadline: deadline, timeout: timeout)
            var reader = ResponseReader(socket: socket, deadline: deadline, timeout: timeout)
            let response = try reader.response(isHead: isHead, limit: limit)
            if !reader.lastLeavesOpen { close() }
            return response
        } catch {
            close()
            throw error
        }
    }

    /// A kept connection that reads as ready before a request was sent: the server closed it
    /// (or sent something no request asked for); either way it cannot carry the next one.
    private static func isClosedByPeer(_ socket: FileDescriptor) -> Bool {
        var entry = pollfd(fd: socket.rawValue, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) != 0
    }
}

import SystemCalls
/// A response to hand to libmicrohttpd.
public struct HTTPResponse: Sendable {
    /// Where the response body comes from.
    public enum Body: Sendable {
        /// No body (`Content-Length: 0`, or none for 204/304).
        case empty
        /// Bytes held in memory; for small bodies (JSON, problem details).
        case bytes([UInt8])
        /// `length` bytes of the open file `descriptor` from `offset`, sent with sendfile.
        /// The response owns the descriptor from here on and closes it.
        case file(descriptor: Int32, offset: UInt64, length: UInt64)
        /// `length` bytes produced by `reader` in fixed-size blocks.
        case stream(length: UInt64, reader: any HTTPBodyReader)

        /// The number of body bytes this body produces.
        public var length: UInt64 {
            switch self {
            case .empty: 0
            case .bytes(let bytes): UInt64(bytes.count)
            case .file(_, _, let length), .stream(let length, _): length
            }
        }
    }

    /// The status code.
    public var status: Int
    /// Header fields to send; libmicrohttpd adds Content-Length, Date and Connection itself.
    public var headers: [(name: String, value: String)]
    /// The body.
    public var body: Body

    /// Creates a response.
    public init(status: Int, headers: [(name: String, value: String)] = [], body: Body = .empty) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// Closes a file body's descriptor when the response is dropped without being sent.
    public func discard() {
        if case .file(let descriptor, _, _) = body {
            closeDescriptor(descriptor)
        }
    }
}

/// Produces a streamed response body on demand, one block at a time.
public protocol HTTPBodyReader: AnyObject, Sendable {
    /// Fills `buffer` with body bytes starting at body offset `position`; returns the number of
    /// bytes written (at least 1), or nil when the body cannot be produced (the connection is closed).
    func read(at position: UInt64, into buffer: UnsafeMutableRawBufferPointer) -> Int?
}

/// Receives a request body chunk by chunk, on the connection's worker thread.
public protocol HTTPBodyConsumer: AnyObject {
    /// Takes the next chunk. A failure is remembered and reported by `finish(_:)`; the rest of
    /// the body is then read and dropped, since no response can be sent while a body arrives.
    func consume(_ chunk: UnsafeRawBufferPointer)
    /// The body is complete: send the response through `responder`, at once or later from
    /// another thread (slow work such as fsync need not hold the connection's worker thread).
    func finish(_ responder: any HTTPResponder)
    /// The client went away before the body was complete.
    func abandon()
    /// The connection the body arrives on, given before the first chunk, for a consumer that
    /// another request may stop. Optional: a body fed in process has no connection.
    func attach(_ connection: HTTPConnectionHandle)
}

extension HTTPBodyConsumer {
    public func attach(_ connection: HTTPConnectionHandle) {}
}

/// What to do with a request once its head has arrived.
public enum HTTPRequestAction {
    /// Answer now; any request body is never read (an early 413 or 412 goes out this way).
    case respond(HTTPResponse)
    /// Read the body into the consumer, then send what it answers in `finish(_:)`.
    case receive(any HTTPBodyConsumer)
    /// Answer through the responder, now or later from any thread: `start` runs on the worker
    /// thread once the request is complete (a body is read and dropped), and the connection is
    /// suspended until the answer is sent. For work that waits on something else, such as an
    /// index lookup shared with other requests.
    case later(@Sendable (any HTTPResponder) -> Void)
    /// Decide later, from any thread, before any body byte is read: the connection is
    /// suspended after its head until `start`'s decider is told what to do (a blocking hook
    /// answering, say). A refusal then goes out without the body being read.
    case decide(@Sendable (any HTTPDecider) -> Void)
}

/// Takes the decision about a request that a `.decide` action put off. Call `decide` exactly
/// once, from any thread.
public protocol HTTPDecider: AnyObject, Sendable {
    /// What to do with the request, as `HTTPHandler.handle` would have said.
    func decide(_ action: sending HTTPRequestAction)
}

/// What the server reports when a request is done.
public struct HTTPRequestSummary: Sendable {
    /// The request head.
    public let head: HTTPRequestHead
    /// The status sent, or nil if no response was queued.
    public let status: Int?
    /// Body bytes received.
    public let bytesReceived: UInt64
    /// Body bytes of the response queued.
    public let bytesSent: UInt64
    /// Seconds from the head's arrival to completion.
    public let duration: Double
    /// False when the connection broke or timed out before the response was complete.
    public let completed: Bool

    /// Creates a summary; made by the server, and by a test that drives a handler in process.
    public init(head: HTTPRequestHead, status: Int?, bytesReceived: UInt64, bytesSent: UInt64, duration: Double,
                completed: Bool) {
        self.head = head
        self.status = status
        self.bytesReceived = bytesReceived
        self.bytesSent = bytesSent
        self.duration = duration
        self.completed = completed
    }
}

/// The application side of the server.
public protocol HTTPHandler: Sendable {
    /// Decides what to do with a request, given its head, before any body byte is read.
    func handle(_ head: HTTPRequestHead) -> HTTPRequestAction
    /// Called once per request when libmicrohttpd is done with it.
    func requestCompleted(_ summary: HTTPRequestSummary)
    /// The answer for a request still waiting for its response when the server shuts down.
    func shutdownResponse() -> HTTPResponse
    /// Adds what every answer to `head` carries, whichever way it was made (CORS headers); runs
    /// once per response, just before it is sent.
    func finishing(_ response: inout HTTPResponse, for head: HTTPRequestHead)
}

extension HTTPHandler {
    /// Default: nothing to report.
    public func requestCompleted(_ summary: HTTPRequestSummary) {}
    /// Default: nothing to add.
    public func finishing(_ response: inout HTTPResponse, for head: HTTPRequestHead) {}
    /// Default: a bare 503.
    public func shutdownResponse() -> HTTPResponse {
        HTTPResponse(status: 503, headers: [("Connection", "close")])
    }
}

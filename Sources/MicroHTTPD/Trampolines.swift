import CMicroHTTPD
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// What the daemon's callbacks share: retained for the daemon's whole life.
final class ServerContext: Sendable {
    let handler: any HTTPHandler
    let inFlight = Atomic<Int>(0)
    /// Closes the connections of slow clients; nil when no limit is set.
    let watchdog: ConnectionWatchdog?
    /// Connections suspended waiting for their response, and whether the server is closing.
    let suspensions = Mutex(Suspensions())

    struct Suspensions {
        var waiting: [ObjectIdentifier: any SuspendedConnection] = [:]
        /// Set once by `HTTPServer.shutdown`: from then on no connection is suspended.
        var closing = false
    }

    init(handler: any HTTPHandler, watchdog: ConnectionWatchdog?) {
        self.handler = handler
        self.watchdog = watchdog
    }

    /// Registers a connection about to be suspended; false once the server is closing.
    func suspending(_ responder: any SuspendedConnection) -> Bool {
        suspensions.withLock { state in
            guard !state.closing else { return false }
            state.waiting[ObjectIdentifier(responder)] = responder
            return true
        }
    }

    /// The connection of `responder` is resumed.
    func resumed(_ responder: any SuspendedConnection) {
        _ = suspensions.withLock { $0.waiting.removeValue(forKey: ObjectIdentifier(responder)) }
    }

    /// Stops suspending connections and returns those suspended now.
    func close() -> [any SuspendedConnection] {
        suspensions.withLock { state in
            state.closing = true
            return Array(state.waiting.values)
        }
    }
}

/// One request's state, kept in libmicrohttpd's `*con_cls` from the first callback to the
/// completion callback. Only the connection's worker thread touches it.
final class RequestState {
    /// The request target exactly as received, before libmicrohttpd splits or decodes it.
    let target: [UInt8]
    /// Where the target lies in libmicrohttpd's read buffer (valid until the request completes).
    let targetAddress: UnsafePointer<CChar>?
    /// The connection as the watchdog sees it.
    let watched: WatchedConnection?
    /// The body is chunked: each chunk's lines are checked for CRLF.
    var chunked = false
    var head: HTTPRequestHead?
    let started = monotonicSeconds()
    var consumer: (any HTTPBodyConsumer)?
    /// The connection as the consumer may shut it down, while the body arrives.
    var connection: HTTPConnectionHandle?
    /// Runs at the end of the body and answers through a responder: the consumer's `finish`,
    /// or the start of a `.later` action.
    var finish: ((any HTTPResponder) -> Void)?
    /// A response decided from the head of a request without a body, queued on the next call.
    var pending: HTTPResponse?
    /// Set once the body is complete; holds the consumer's response.
    var responder: ConnectionResponder?
    /// Set while a `.decide` action's decision is awaited, before the body.
    var decider: ConnectionDecider?
    var bodyFinished = false
    var status: Int?
    var bytesReceived: UInt64 = 0
    var bytesSent: UInt64 = 0

    init(target: [UInt8], targetAddress: UnsafePointer<CChar>?, watched: WatchedConnection?) {
        self.target = target
        self.targetAddress = targetAddress
        self.watched = watched
    }
}

/// The URI log callback: the first sight of a request, with its raw target. Its return value
/// becomes `*con_cls`, so the request's state exists from here to the completion callback.
let requestStarted: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, OpaquePointer?) -> UnsafeMutableRawPointer? = { cls, uri, connection in
    guard let cls else { return nil }
    let server = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    server.inFlight.add(1, ordering: .relaxed)
    let state = RequestState(target: uri.map { bytes($0) } ?? [], targetAddress: uri,
                             watched: server.watchdog == nil ? nil : connection.flatMap(watchedConnection))
    state.watched?.requestLineSeen.store(true, ordering: .relaxed)
    return Unmanaged.passRetained(state).toOpaque()
}

/// The access handler: first call with the head, then once per body chunk, then once with
/// `*upload_data_size == 0` at the end of the body.
let accessHandler: MHD_AccessHandlerCallback = { cls, connection, url, method, version, uploadData, uploadDataSize, conCls in
    guard let cls, let connection, let method, let version, let uploadDataSize, let conCls else {
        return .NO
    }
    let server = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()

    guard let pointer = conCls.pointee else { return .NO }
    let state = Unmanaged<RequestState>.fromOpaque(pointer).takeUnretainedValue()

    if state.head == nil {
        return start(state, on: connection, server: server, method: method, version: version)
    }
    if let decider = state.decider {
        // Called again after a resume, before any body byte: the decision has arrived.
        return take(decider, state, on: connection, server: server)
    }

    let size = uploadDataSize.pointee
    if size > 0 {
        state.watched?.bodyBytes.add(UInt64(size), ordering: .relaxed)
        // RFC 9112 §7.1: chunk lines end in CRLF; libmicrohttpd 0.9.75 also takes a bare LF,
        // which a front proxy may read otherwise (request smuggling). Mid-body no answer can be
        // queued any more, so the connection is closed and the request abandoned.
        if state.chunked, blobd_mhd_chunk_lines_are_crlf(uploadData) == 0 { return .NO }
        if let uploadData, !state.bodyFinished {
            let before = state.watched == nil ? 0 : monotonicMilliseconds()
            state.consumer?.consume(UnsafeRawBufferPointer(start: uploadData, count: size))
            state.bytesReceived += UInt64(size)
            if let watched = state.watched {
                let spent = monotonicMilliseconds() &- before
                if spent > 0 { watched.bodyBusy.add(spent, ordering: .relaxed) }
            }
        }
        uploadDataSize.pointee = 0
        return .YES
    }
    if let pending = state.pending {
        state.pending = nil
        return queue(pending, on: connection, state: state, server: server)
    }
    if let responder = state.responder {
        // Called again after a resume: the response has arrived.
        guard let response = responder.takeOrSuspend() else { return .YES }
        state.responder = nil
        return queue(response, on: connection, state: state, server: server)
    }
    guard !state.bodyFinished, let finish = state.finish else { return .YES }
    state.bodyFinished = true
    state.connection?.detach()
    state.watched?.enter(.other)
    state.finish = nil
    let responder = ConnectionResponder(connection: connection, server: server)
    finish(responder)
    guard let response = responder.takeOrSuspend() else {
        state.responder = responder
        return .YES
    }
    return queue(response, on: connection, state: state, server: server)
}

/// The first call of a request: its head is complete. Asks the handler what to do.
private func start(_ state: RequestState, on connection: OpaquePointer, server: ServerContext,
                   method: UnsafePointer<CChar>, version: UnsafePointer<CChar>) -> MHD_Result {
    let head = readHead(connection, state: state, method: method, version: version)
    state.head = head
    state.chunked = head["Transfer-Encoding"] != nil
    return apply(server.handler.handle(head), state, on: connection, server: server)
}

/// Does what the handler said about a request whose head has arrived and whose body is unread.
private func apply(_ action: HTTPRequestAction, _ state: RequestState, on connection: OpaquePointer,
                   server: ServerContext) -> MHD_Result {
    guard let head = state.head else { return .NO }
    switch action {
    case .respond(let response):
        state.watched?.enter(.other)
        state.bodyFinished = true
        // libmicrohttpd keeps the connection alive only if the response is queued after
        // the (empty) body has been read; with a body pending, answering now is the point
        // (an early 413 or 412) and the connection is closed after it.
        guard head.hasBody else {
            state.pending = response
            return .YES
        }
        return queue(response, on: connection, state: state, server: server)
    case .receive(let consumer):
        state.watched?.enter(head.hasBody ? .body : .other)
        state.consumer = consumer
        state.finish = consumer.finish
        let handle = HTTPConnectionHandle(socket: blobd_mhd_connection_fd(connection))
        state.connection = handle
        consumer.attach(handle)
        return .YES
    case .later(let start):
        state.watched?.enter(head.hasBody ? .body : .other)
        state.finish = start
        return .YES
    case .decide(let start):
        state.watched?.enter(.other)
        let decider = ConnectionDecider(connection: connection, server: server)
        state.decider = decider
        start(decider)
        return take(decider, state, on: connection, server: server)
    }
}

/// Applies a decision that has arrived, or leaves the connection suspended until it does.
private func take(_ decider: ConnectionDecider, _ state: RequestState, on connection: OpaquePointer,
                  server: ServerContext) -> MHD_Result {
    guard let action = decider.takeOrSuspend() else { return .YES }
    state.decider = nil
    return apply(action, state, on: connection, server: server)
}

/// The completion callback: fires once per request, also when the client went away. The one
/// place where per-request state is released and an unfinished body is abandoned.
let requestCompleted: MHD_RequestCompletedCallback = { cls, _, conCls, termination in
    guard let cls, let conCls, let pointer = conCls.pointee else { return }
    conCls.pointee = nil
    let server = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    let state = Unmanaged<RequestState>.fromOpaque(pointer).takeRetainedValue()
    state.connection?.detach()
    if !state.bodyFinished {
        state.consumer?.abandon()
    }
    state.pending?.discard()
    server.inFlight.subtract(1, ordering: .relaxed)
    // A keep-alive connection now waits for its next request head.
    state.watched?.requestLineSeen.store(false, ordering: .relaxed)
    state.watched?.enter(.head)
    guard let head = state.head else { return }
    server.handler.requestCompleted(HTTPRequestSummary(
        head: head, status: state.status,
        bytesReceived: state.bytesReceived, bytesSent: state.bytesSent,
        duration: monotonicSeconds() - state.started,
        completed: termination == .REQUEST_TERMINATED_COMPLETED_OK))
}

/// Hands `response` to libmicrohttpd for this connection.
/// Every answer of both dialects passes here, where the handler's `finishing` adds what every
/// answer carries (CORS).
private func queue(_ response: HTTPResponse, on connection: OpaquePointer, state: RequestState,
                   server: ServerContext) -> MHD_Result {
    var response = response
    if let head = state.head { server.handler.finishing(&response, for: head) }
    guard let mhdResponse = makeResponse(response.body) else { return .NO }
    defer { MHD_destroy_response(mhdResponse) }
    for (name, value) in response.headers {
        // libmicrohttpd refuses an empty value; a single space is whitespace around an empty
        // field value (RFC 9110 §5.5), which every client trims, so the field arrives empty.
        let value = value.isEmpty ? " " : value
        // withCString copies a small string to the stack, where an implicit conversion allocates.
        _ = name.withCString { name in value.withCString { value in MHD_add_response_header(mhdResponse, name, value) } }
    }
    // libmicrohttpd 0.9.75 never shows the handler the end of a chunked body (the CRLF after the
    // last data, the 0 line, the trailer), so a bare LF there cannot be refused: the connection
    // is closed after the answer instead, so that nothing after such a body is read as a request.
    if state.chunked, !response.headers.contains(where: { $0.name.caseInsensitiveEquals("Connection") }) {
        MHD_add_response_header(mhdResponse, "Connection", "close")
    }
    state.status = response.status
    state.bytesSent = response.body.length
    return MHD_queue_response(connection, UInt32(response.status), mhdResponse)
}

private func makeResponse(_ body: HTTPResponse.Body) -> OpaquePointer? {
    switch body {
    case .empty:
        return MHD_create_response_from_buffer(0, nil, .RESPMEM_PERSISTENT)
    case .bytes(let bytes):
        return bytes.withUnsafeBytes { buffer in
            MHD_create_response_from_buffer(buffer.count, UnsafeMutableRawPointer(mutating: buffer.baseAddress),
                                            .RESPMEM_MUST_COPY)
        }
    case .file(let descriptor, let offset, let length):
        // On success libmicrohttpd owns the descriptor; on failure it is still ours to close.
        guard let response = MHD_create_response_from_fd_at_offset64(length, descriptor, offset) else {
            closeDescriptor(descriptor)
            return nil
        }
        return response
    case .stream(let length, let reader):
        let box = Unmanaged.passRetained(ReaderBox(reader)).toOpaque()
        guard let response = MHD_create_response_from_callback(length, 64 * 1024, readBody, box, releaseReader) else {
            Unmanaged<ReaderBox>.fromOpaque(box).release()
            return nil
        }
        return response
    }
}

private final class ReaderBox {
    let reader: any HTTPBodyReader
    init(_ reader: any HTTPBodyReader) { self.reader = reader }
}

private let readBody: MHD_ContentReaderCallback = { cls, position, buffer, max in
    guard let cls, let buffer, max > 0 else { return -2 }
    let reader = Unmanaged<ReaderBox>.fromOpaque(cls).takeUnretainedValue().reader
    guard let count = reader.read(at: position, into: UnsafeMutableRawBufferPointer(start: buffer, count: max)),
          count > 0 else {
        return -2  // MHD_CONTENT_READER_END_WITH_ERROR: the connection is closed
    }
    return count
}

private let releaseReader: MHD_ContentReaderFreeCallback = { cls in
    guard let cls else { return }
    Unmanaged<ReaderBox>.fromOpaque(cls).release()
}

// MARK: - Reading the request head

private final class HeadCollector {
    var headers: [(name: String, value: String)] = []
}

private func readHead(_ connection: OpaquePointer, state: RequestState,
                      method: UnsafePointer<CChar>, version: UnsafePointer<CChar>) -> HTTPRequestHead {
    let collector = HeadCollector()
    withExtendedLifetime(collector) {
        _ = MHD_get_connection_values_n(connection, .HEADER_KIND, collectHeader,
                                    Unmanaged.passUnretained(collector).toOpaque())
    }
    let strict = blobd_mhd_head_is_strict(connection, method, state.targetAddress, state.target.count, version) != 0
    return HTTPRequestHead(method: text(method), target: state.target, version: text(version),
                           headers: collector.headers, peer: blobd_mhd_client_address(connection).flatMap(SocketAddress.init),
                           isStrictlyFramed: strict)
}

private let collectHeader: MHD_KeyValueIteratorN = { cls, _, key, keySize, value, valueSize in
    guard let cls, let key else { return .YES }
    let collector = Unmanaged<HeadCollector>.fromOpaque(cls).takeUnretainedValue()
    collector.headers.append((text(key, count: keySize), value.map { text($0, count: valueSize) } ?? ""))
    return .YES
}

func bytes(_ pointer: UnsafePointer<CChar>, count: Int? = nil) -> [UInt8] {
    let n = count ?? strlen(pointer)
    return pointer.withMemoryRebound(to: UInt8.self, capacity: n) { Array(UnsafeBufferPointer(start: $0, count: n)) }
}

/// Header text: invalid UTF-8 (obs-text) becomes U+FFFD, which no header rule accepts.
private func text(_ pointer: UnsafePointer<CChar>, count: Int? = nil) -> String {
    let n = count ?? strlen(pointer)
    return pointer.withMemoryRebound(to: UInt8.self, capacity: n) {
        String(decoding: UnsafeBufferPointer(start: $0, count: n), as: UTF8.self)
    }
}

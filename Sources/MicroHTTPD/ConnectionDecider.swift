import CMicroHTTPD
import Synchronization

/// A connection suspended while it waits for something other than the end of its body: the
/// server's shutdown resumes it with the handler's `shutdownResponse()`.
protocol SuspendedConnection: AnyObject, Sendable {
    func answerShutdown(_ response: HTTPResponse)
}

extension ConnectionResponder: SuspendedConnection {
    func answerShutdown(_ response: HTTPResponse) { send(response) }
}

/// An action crosses threads once, from the one that decided to the connection's worker
/// thread, and is used there only.
extension HTTPRequestAction: @unchecked Sendable {}

/// Takes the decision a `.decide` action put off, for a libmicrohttpd connection. If it is not
/// there when the action's start returns, the connection is suspended right after its head
/// (no body byte read) and resumed when `decide` is called; libmicrohttpd then calls the access
/// handler again with no body data, where a response can still be queued before the body, or
/// the body read into a consumer.
///
/// `@unchecked Sendable` is sound for the reasons `ConnectionResponder` gives.
final class ConnectionDecider: HTTPDecider, SuspendedConnection, @unchecked Sendable {
    private enum State {
        case waiting
        case suspended
        case ready(HTTPRequestAction)
        case taken
    }

    private let connection: OpaquePointer
    private let server: ServerContext
    private let state = Mutex(State.waiting)

    init(connection: OpaquePointer, server: ServerContext) {
        self.connection = connection
        self.server = server
    }

    func decide(_ action: sending HTTPRequestAction) {
        let late: HTTPRequestAction? = state.withLock { state in
            switch state {
            case .waiting:
                state = .ready(action)
            case .suspended:
                state = .ready(action)
                server.resumed(self)
                MHD_resume_connection(connection)
            case .ready, .taken:
                return action
            }
            return nil
        }
        // Decided after the request was answered otherwise (a shutdown): drop what it holds.
        switch late {
        case .respond(let response): response.discard()
        case .receive(let consumer): consumer.abandon()
        case .later, .decide, nil: break
        }
    }

    func answerShutdown(_ response: HTTPResponse) { decide(.respond(response)) }

    /// On the worker thread: the decision if it has arrived, else the connection is suspended
    /// and nil returned.
    func takeOrSuspend() -> HTTPRequestAction? {
        state.withLock { state -> HTTPRequestAction? in
            switch state {
            case .ready(let action):
                state = .taken
                return action
            case .waiting:
                guard server.suspending(self) else {
                    state = .taken
                    return .respond(server.handler.shutdownResponse())
                }
                MHD_suspend_connection(connection)
                state = .suspended
                return nil
            case .suspended, .taken:
                return nil
            }
        }
    }
}

import CMicroHTTPD
import Synchronization

/// Sends the response to a request whose body has been read, now or later and from any
/// thread. If the response is not there when `finish(_:)` returns, the connection is suspended
/// (its worker thread goes on serving others) and resumed when `send(_:)` is called.
///
/// While the server shuts down, a suspended connection is resumed with the handler's
/// `shutdownResponse()` (libmicrohttpd must not be stopped with a connection suspended), and
/// none is suspended any more; a response sent after that is dropped.
///
/// `@unchecked Sendable` is sound: the connection pointer stays valid until the request
/// completes, which cannot happen while it is suspended, and `state` orders suspend and resume.
public final class HTTPResponder: @unchecked Sendable {
    private enum State {
        case waiting
        case suspended
        case ready(HTTPResponse)
        case sent
    }

    private let connection: OpaquePointer
    private let server: ServerContext
    private let state = Mutex(State.waiting)

    init(connection: OpaquePointer, server: ServerContext) {
        self.connection = connection
        self.server = server
    }

    /// Sends `response`. Call exactly once.
    public func send(_ response: HTTPResponse) {
        state.withLock { state in
            switch state {
            case .waiting:
                state = .ready(response)
            case .suspended:
                state = .ready(response)
                // Under the lock, so a shutdown that finds this answer ready also finds the
                // connection resumed before it stops libmicrohttpd.
                server.resumed(self)
                MHD_resume_connection(connection)
            case .ready, .sent:
                response.discard()
            }
        }
    }

    /// On the worker thread after `finish`: the response if it is ready, else the connection
    /// is suspended and nil returned.
    func takeOrSuspend() -> HTTPResponse? {
        state.withLock { state in
            switch state {
            case .ready(let response):
                state = .sent
                return response
            case .waiting:
                guard server.suspending(self) else {
                    // Shutting down: answer now rather than suspend.
                    state = .sent
                    return server.handler.shutdownResponse()
                }
                // Under the lock, so a concurrent `send` resumes only after this suspend.
                MHD_suspend_connection(connection)
                state = .suspended
                return nil
            case .suspended, .sent:
                return nil
            }
        }
    }
}

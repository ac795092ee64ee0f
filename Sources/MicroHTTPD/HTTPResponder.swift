import CMicroHTTPD
import Synchronization

/// Where the response to a request goes: the response sink at the libmicrohttpd boundary.
/// A handler answers into it from a body consumer's `finish(_:)` or a `.later` action, now or
/// later and from any thread. `ConnectionResponder` sends into a libmicrohttpd connection; a
/// test can record the response in process instead.
public protocol HTTPResponder: AnyObject, Sendable {
    /// Sends `response`. Call `send` exactly once.
    func send(_ response: HTTPResponse)
    /// Sends what `make` returns; `make` runs on the thread that sends the response (for a
    /// connection, its worker thread, not the caller's), so work such as opening files is spread
    /// over the workers. It is not run at all if the request is answered otherwise (a server
    /// shutting down).
    func send(making make: @escaping @Sendable () -> HTTPResponse)
}

/// Sends the response to a request whose body has been read into its libmicrohttpd connection.
/// If the response is not there when `finish(_:)` (or the start of a `.later` action)
/// returns, the connection is suspended (its worker thread goes on serving others) and resumed
/// when `send` is called.
///
/// While the server shuts down, a suspended connection is resumed with the handler's
/// `shutdownResponse()` (libmicrohttpd must not be stopped with a connection suspended), and
/// none is suspended any more; a response sent after that is dropped.
///
/// `@unchecked Sendable` is sound: the connection pointer stays valid until the request
/// completes, which cannot happen while it is suspended, and `state` orders suspend and resume.
final class ConnectionResponder: HTTPResponder, @unchecked Sendable {
    private enum State {
        case waiting
        case suspended
        case ready(Answer)
        case sent
    }

    /// A response, or how to make it on the connection's worker thread.
    private enum Answer {
        case response(HTTPResponse)
        case make(@Sendable () -> HTTPResponse)

        /// Drops an answer that will not be sent (nothing is made, a file body is closed).
        func discard() {
            if case .response(let response) = self { response.discard() }
        }
    }

    private let connection: OpaquePointer
    private let server: ServerContext
    private let state = Mutex(State.waiting)

    init(connection: OpaquePointer, server: ServerContext) {
        self.connection = connection
        self.server = server
    }

    func send(_ response: HTTPResponse) {
        deliver(.response(response))
    }

    func send(making make: @escaping @Sendable () -> HTTPResponse) {
        deliver(.make(make))
    }

    private func deliver(_ answer: Answer) {
        state.withLock { state in
            switch state {
            case .waiting:
                state = .ready(answer)
            case .suspended:
                state = .ready(answer)
                // Under the lock, so a shutdown that finds this answer ready also finds the
                // connection resumed before it stops libmicrohttpd.
                server.resumed(self)
                MHD_resume_connection(connection)
            case .ready, .sent:
                answer.discard()
            }
        }
    }

    /// On the worker thread after `finish`: the response if it is ready, else the connection
    /// is suspended and nil returned.
    func takeOrSuspend() -> HTTPResponse? {
        let answer = state.withLock { state -> Answer? in
            switch state {
            case .ready(let answer):
                state = .sent
                return answer
            case .waiting:
                guard server.suspending(self) else {
                    // Shutting down: answer now rather than suspend.
                    state = .sent
                    return .response(server.handler.shutdownResponse())
                }
                // Under the lock, so a concurrent `send` resumes only after this suspend.
                MHD_suspend_connection(connection)
                state = .suspended
                return nil
            case .suspended, .sent:
                return nil
            }
        }
        switch answer {
        case .response(let response): return response
        case .make(let make): return make()
        case nil: return nil
        }
    }
}

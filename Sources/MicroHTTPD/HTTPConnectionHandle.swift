import CMicroHTTPD
import Synchronization

import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// The connection a request body arrives on, as far as another thread may act on it: `close()`
/// shuts its socket down, so that the request ends and libmicrohttpd closes the connection.
/// For a request a newer one takes over (a tus PATCH whose client went away unnoticed).
///
/// The socket can be shut down only while the body is being read: the handle is detached when
/// the body ends and when the request completes, before libmicrohttpd closes the descriptor, so
/// a descriptor number reused by a later connection is never touched.
public final class HTTPConnectionHandle: Sendable {
    private let socket: Mutex<Int32>

    init(socket: Int32) {
        self.socket = Mutex(socket)
    }

    /// Shuts the connection down (both directions); nothing once the body has ended.
    public func close() {
        socket.withLock { socket in
            guard socket >= 0 else { return }
            _ = SystemCall.run("shutdown") { shutdown(socket, Int32(SHUT_RDWR)) }
            socket = -1
        }
    }

    /// The body has ended or the request is complete: `close()` does nothing from now on.
    func detach() {
        socket.withLock { $0 = -1 }
    }
}

import Dispatch
import MicroHTTPD
import Synchronization

/// The in-process response sink: records the one response a handler sends, from any thread,
/// and lets the test's thread wait for it with a timeout.
final class RecordingResponder: HTTPResponder {
    private enum Answer {
        case response(HTTPResponse)
        case make(@Sendable () -> HTTPResponse)
    }

    private let answer = Mutex<Answer?>(nil)
    private let arrived = DispatchSemaphore(value: 0)

    func send(_ response: HTTPResponse) {
        deliver(.response(response))
    }

    func send(making make: @escaping @Sendable () -> HTTPResponse) {
        deliver(.make(make))
    }

    private func deliver(_ new: Answer) {
        let first = answer.withLock { answer in
            if case .some = answer { return false }
            answer = new
            return true
        }
        if first {
            arrived.signal()
        } else if case .response(let response) = new {
            response.discard()  // a second answer is dropped, as on a connection
        }
    }

    /// The response once it is sent (made on this thread for `send(making:)`), or nil when none
    /// arrives within `timeout` seconds.
    func wait(timeout: Double) -> HTTPResponse? {
        guard arrived.wait(timeout: .now() + timeout) == .success else { return nil }
        switch answer.withLock({ $0 }) {
        case .response(let response): return response
        case .make(let make): return make()
        case nil: return nil
        }
    }
}

/// The in-process decider of a `.decide` action: records the one decision, from any thread,
/// and lets the test's thread wait for it with a timeout.
final class RecordingDecider: HTTPDecider, @unchecked Sendable {
    private let action = Mutex<HTTPRequestAction?>(nil)
    private let arrived = DispatchSemaphore(value: 0)

    func decide(_ new: sending HTTPRequestAction) {
        let first = action.withLock { action in
            if case .some = action { return false }
            action = new
            return true
        }
        if first { arrived.signal() }
    }

    /// The decision once taken, or nil when none arrives within `timeout` seconds.
    func wait(timeout: Double) -> HTTPRequestAction? {
        guard arrived.wait(timeout: .now() + timeout) == .success else { return nil }
        return action.withLock { $0 }
    }
}

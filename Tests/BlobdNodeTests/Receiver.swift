import Foundation
import MicroHTTPD
import OutboundHTTP
import Synchronization

/// One request a `Receiver` got.
struct Received: Sendable {
    let method: String
    let path: String
    let headers: [(name: String, value: String)]
    let body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// The body parsed as a JSON object.
    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
    }
}

/// A webhook or hook receiver on 127.0.0.1 port 0 (a libmicrohttpd server): it records every
/// request with its body, and answers each with the status and JSON body `answer` gives for
/// it and its place among those received.
final class Receiver: Sendable {
    private let server: HTTPServer
    private let handler: Handler

    init(_ answer: @escaping @Sendable (Received, Int) -> (status: Int, body: String)) throws {
        handler = Handler(answer: answer)
        server = try HTTPServer(configuration: HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 2), handler: handler)
    }

    /// Where it listens, as a webhook or hook URL.
    func url(_ path: String = "/hook") throws -> ServerURL {
        try ServerURL(parsing: "http://127.0.0.1:\(server.port)\(path)")
    }

    /// What arrived so far, in order.
    var requests: [Received] { handler.received.withLock { $0 } }

    /// Waits (10 s at most) until `count` requests have arrived; what arrived.
    func waitFor(_ count: Int) -> [Received] {
        _ = eventually { requests.count >= count }
        return requests
    }

    deinit { server.stop() }

    private final class Handler: HTTPHandler {
        let received = Mutex<[Received]>([])
        let answer: @Sendable (Received, Int) -> (status: Int, body: String)

        init(answer: @escaping @Sendable (Received, Int) -> (status: Int, body: String)) {
            self.answer = answer
        }

        func handle(_ head: HTTPRequestHead) -> HTTPRequestAction {
            .receive(Collector(head: head, handler: self))
        }

        func finished(_ head: HTTPRequestHead, _ body: [UInt8], _ responder: any HTTPResponder) {
            let request = Received(method: head.method, path: String(decoding: head.path, as: UTF8.self), headers: head.headers, body: body)
            let index = received.withLock { received in
                received.append(request)
                return received.count - 1
            }
            let (status, text) = answer(request, index)
            responder.send(HTTPResponse(status: status, headers: [("Content-Type", "application/json")], body: .bytes(Array(text.utf8))))
        }
    }

    private final class Collector: HTTPBodyConsumer {
        let head: HTTPRequestHead
        let handler: Handler
        var body: [UInt8] = []

        init(head: HTTPRequestHead, handler: Handler) {
            self.head = head
            self.handler = handler
        }

        func consume(_ chunk: UnsafeRawBufferPointer) { body += chunk }
        func finish(_ responder: any HTTPResponder) { handler.finished(head, body, responder) }
        func abandon() {}
    }
}

/// Polls `condition` every 2 ms until it holds or `seconds` pass; whether it held.
func eventually(within seconds: Int = 10, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        usleep(2_000)
    }
    return try condition()
}

import Foundation
import MicroHTTPD

/// Drives an `HTTPHandler` without a socket: the request head goes to `handle(_:)`, a body is
/// fed to the consumer in chunks of varying sizes (so that chunk boundaries fall everywhere),
/// and the response is recorded by a `RecordingResponder`. libmicrohttpd's own part of the
/// answer is added as it adds it: `Content-Length` (none on 1xx, 204 and 304), no body on HEAD.
struct InProcessTransport: Sendable {
    let handler: any HTTPHandler
    /// Chunk sizes the body is cut into, in turn.
    static let chunkSizes = [1, 7, 4093, 65536, 3, 262_144]
    /// How long a response answered later may take.
    static let timeout = 30.0

    func send(_ request: TestRequest) throws -> TestResponse {
        let head = HTTPRequestHead(method: request.method, target: Array(request.target.utf8), headers: request.headers)
        var response = try answer(handler.handle(head), body: request.body)
        handler.finishing(&response, for: head)
        let bodyBytes = try read(response.body, sent: request.method != "HEAD")
        handler.requestCompleted(HTTPRequestSummary(
            head: head, status: response.status, bytesReceived: UInt64(request.body.count),
            bytesSent: response.body.length, duration: 0, completed: true))
        var headers = response.headers
        if !(100..<200).contains(response.status), response.status != 204, response.status != 304 {
            headers.append((name: "Content-Length", value: String(response.body.length)))
        }
        return TestResponse(status: response.status, headers: headers, body: bodyBytes)
    }

    /// The response to what the handler decided, the body fed to a consumer if it asks for it.
    private func answer(_ action: HTTPRequestAction, body: [UInt8]) throws -> HTTPResponse {
        switch action {
        case .respond(let answer):
            return answer
        case .receive(let consumer):
            feed(body, to: consumer)
            return try wait { consumer.finish($0) }
        case .later(let start):
            return try wait(start)
        case .decide(let start):
            let decider = RecordingDecider()
            start(decider)
            guard let decided = decider.wait(timeout: Self.timeout) else {
                throw TransportError("no decision within \(Self.timeout) s")
            }
            return try answer(decided, body: body)
        }
    }

    private func feed(_ body: [UInt8], to consumer: any HTTPBodyConsumer) {
        body.withUnsafeBytes { bytes in
            var offset = 0, turn = 0
            while offset < bytes.count {
                let size = min(Self.chunkSizes[turn % Self.chunkSizes.count], bytes.count - offset)
                consumer.consume(UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + size]))
                offset += size
                turn += 1
            }
        }
    }

    private func wait(_ start: (any HTTPResponder) -> Void) throws -> HTTPResponse {
        let recorder = RecordingResponder()
        start(recorder)
        guard let response = recorder.wait(timeout: Self.timeout) else {
            throw TransportError("no response within \(Self.timeout) s")
        }
        return response
    }

    /// The body's bytes: a file body by `pread` (its descriptor then closed), a stream through
    /// its reader in 64 KiB blocks, as libmicrohttpd asks for them. Nothing on HEAD.
    private func read(_ body: HTTPResponse.Body, sent: Bool) throws -> [UInt8] {
        switch body {
        case .empty:
            return []
        case .bytes(let bytes):
            return sent ? bytes : []
        case .file(let descriptor, let offset, let length):
            defer { close(descriptor) }
            return sent ? try pread(descriptor, offset: offset, length: length) : []
        case .stream(let length, let reader):
            return sent ? try stream(reader, length: length) : []
        }
    }

    private func pread(_ descriptor: Int32, offset: UInt64, length: UInt64) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: Int(length))
        var done = 0
        try bytes.withUnsafeMutableBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            while done < buffer.count {
                let n = Glibc.pread(descriptor, base + done, buffer.count - done, off_t(offset) + off_t(done))
                if n < 0, errno == EINTR { continue }
                guard n > 0 else { throw TransportError("pread of a file body failed or ended early") }
                done += n
            }
        }
        return bytes
    }

    private func stream(_ reader: any HTTPBodyReader, length: UInt64) throws -> [UInt8] {
        var bytes: [UInt8] = []
        var block = [UInt8](repeating: 0, count: 64 * 1024)
        while UInt64(bytes.count) < length {
            let wanted = min(block.count, Int(length - UInt64(bytes.count)))
            let count = block.withUnsafeMutableBytes { buffer in
                reader.read(at: UInt64(bytes.count), into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<wanted]))
            }
            guard let count, count > 0 else { throw TransportError("a streamed body could not be produced") }
            bytes += block[..<count]
        }
        return bytes
    }
}

/// A request the harness could not complete.
public struct TransportError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

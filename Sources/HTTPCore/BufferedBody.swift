import BlobStore
import MicroHTTPD

/// Reads a small request body into memory (up to `limit` bytes; nil past it), then answers
/// with `respond`: on the worker thread, or on `committers` when the answer takes long work.
public final class BufferedBody: HTTPBodyConsumer {
    private var bytes: [UInt8] = []
    private var overflow = false
    private let limit: Int
    private let committers: BlockingPool?
    private let respond: ([UInt8]?) -> HTTPResponse

    public init(limit: Int, committers: BlockingPool? = nil, respond: @escaping ([UInt8]?) -> HTTPResponse) {
        self.limit = limit
        self.committers = committers
        self.respond = respond
    }

    public func consume(_ chunk: UnsafeRawBufferPointer) {
        guard !overflow else { return }
        if bytes.count + chunk.count > limit {
            overflow = true
            bytes = []
            return
        }
        bytes += chunk
    }

    public func finish(_ responder: HTTPResponder) {
        guard let committers else { return responder.send(respond(overflow ? nil : bytes)) }
        let handover = Handover(value: (respond, overflow ? nil : bytes))
        committers.submit {
            responder.send(handover.value.0(handover.value.1))
        }
    }

    public func abandon() {}
}

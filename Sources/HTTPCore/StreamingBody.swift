import BlobStore
import MicroHTTPD
import Observability

/// The one consumer of a streamed request body, for every dialect (/v1 PUT and POST, tus PATCH,
/// S3 PutObject and UploadPart). It takes the chunks libmicrohttpd hands over on the connection's
/// worker thread and passes them to `write` (the store's write stream, or a decoder such as
/// aws-chunked in front of it); the first failure is latched and every later chunk is read and
/// dropped, since no answer can go out while a body arrives. Once the body is in, `end` runs on
/// the commit pool with the latched failure (nil if none): it verifies what the dialect needs
/// (digests, framing, lengths), makes the bytes durable and answers, while the connection waits
/// suspended and its worker thread serves others.
///
/// What differs between dialects is only these closures; the digests a dialect needs are asked
/// for when it starts its write stream (a `BodyHasher`), and size limits are the write stream's.
public final class StreamingBody: HTTPBodyConsumer {
    /// Takes the body's bytes as they arrive; a throw latches the failure.
    public typealias Write = (UnsafeRawBufferPointer) throws -> Void
    /// Runs on the commit pool once the body is complete: `failure` is the first error `write`
    /// threw; the answer goes to `respond`, from any thread.
    public typealias End = (_ failure: (any Error)?, _ respond: @escaping (HTTPResponse) -> Void) -> Void

    private let committers: BlockingPool
    private let write: Write
    private let end: End
    private let dropped: () -> Void
    private let attaching: ((HTTPConnectionHandle) -> Void)?
    private let inFlight: InFlightUpload?
    private var failure: (any Error)?

    /// `metrics`: counts the body in `blobd_uploads_in_flight` until it is answered or dropped.
    /// `abandon`: the client went away before the body was complete. `attach`: the connection
    /// the body arrives on, for a request that a newer one may stop.
    public init(committers: BlockingPool, metrics: Metrics? = nil, write: @escaping Write, abandon: @escaping () -> Void,
                attach: ((HTTPConnectionHandle) -> Void)? = nil, end: @escaping End) {
        self.committers = committers
        self.write = write
        self.end = end
        self.dropped = abandon
        self.attaching = attach
        self.inFlight = metrics.map(InFlightUpload.init)
    }

    public func consume(_ chunk: UnsafeRawBufferPointer) {
        guard failure == nil else { return }
        do {
            try write(chunk)
        } catch {
            failure = error
        }
    }

    public func finish(_ responder: any HTTPResponder) {
        let handover = Handover(value: self)
        committers.submit {
            let body = handover.value
            body.end(body.failure) { response in
                body.inFlight?.end()
                responder.send(response)
            }
        }
    }

    public func abandon() {
        inFlight?.end()
        dropped()
    }

    public func attach(_ connection: HTTPConnectionHandle) {
        attaching?(connection)
    }
}

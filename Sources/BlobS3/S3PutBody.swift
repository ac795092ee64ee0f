import Foundation
import HTTPCore
import BlobStore
import MicroHTTPD
import TusHooks

/// Where an S3 body's bytes go: a new object (PutObject) or a part (UploadPart).
protocol S3BodySink: AnyObject {
    func write(_ bytes: UnsafeRawBufferPointer) throws(StoreError)
    /// Writes out what is buffered; the digests of every byte (from the `BodyHasher` it was
    /// started with).
    func digests() throws(StoreError) -> BodyHasher.Digests
    /// Makes the bytes durable and answers; runs on the commit pool. `md5` is the body's MD5,
    /// `checksum` its verified `x-amz-checksum-*` as `algorithm:base64`.
    func complete(md5: [UInt8], checksum: String?, then respond: @escaping (Result<HTTPResponse, any Error>) -> Void)
    func abandon()
    /// The connection the body arrives on (a part sent again shuts the earlier one's down).
    func attach(_ connection: HTTPConnectionHandle)
}

extension S3BodySink {
    func attach(_ connection: HTTPConnectionHandle) {}
}

/// The new object of a PutObject: committed atomically at the end.
final class ObjectSink: S3BodySink {
    private let stream: BlobWriteStream
    private let key: BlobKey
    private let attributes: BlobAttributes
    private let requestID: String
    private let condition: WriteCondition
    /// The pre-finish hook to ask before the commit, and what to tell it.
    private let preFinish: (hooks: BlockingHooks, head: HTTPRequestHead, upload: HookUpload)?
    /// The object's `x-amz-expiration` (`S3Service.expirationHeaders`).
    private let expiration: @Sendable (BlobRecord) -> [(name: String, value: String)]
    /// The event the commit writes, when a subscription wants one.
    private let events: EventDraft?

    init(stream: BlobWriteStream, key: BlobKey, attributes: BlobAttributes, requestID: String,
         condition: WriteCondition, events: EventDraft?, expiration: @escaping @Sendable (BlobRecord) -> [(name: String, value: String)],
         preFinish: (hooks: BlockingHooks, head: HTTPRequestHead, upload: HookUpload)? = nil) {
        self.events = events
        self.expiration = expiration
        self.stream = stream
        self.key = key
        self.attributes = attributes
        self.requestID = requestID
        self.condition = condition
        self.preFinish = preFinish
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws(StoreError) { try stream.write(bytes) }

    func digests() throws(StoreError) -> BodyHasher.Digests { try stream.digests() }

    func complete(md5: [UInt8], checksum: String?, then respond: @escaping (Result<HTTPResponse, any Error>) -> Void) {
        guard let preFinish else { return commit(md5: md5, checksum: checksum, adding: [], then: respond) }
        var upload = preFinish.upload
        upload.size = stream.size
        upload.offset = stream.size
        preFinish.hooks.preFinish(preFinish.head, upload: upload) { [self] outcome in
            switch outcome {
            case .proceed(let changes):
                commit(md5: md5, checksum: checksum, adding: changes.headers, then: respond)
            case .reject(let response):
                stream.abandon()
                respond(.success(response))
            case .fail(let error):
                stream.abandon()
                respond(.failure(error))
            }
        }
    }

    private func commit(md5: [UInt8], checksum: String?, adding headers: [(name: String, value: String)],
                        then respond: @escaping (Result<HTTPResponse, any Error>) -> Void) {
        stream.commit(as: key, attributes: attributes, md5: md5, checksum: checksum, if: condition, events: events) { [requestID, expiration] result in
            respond(result.map { stored in
                HTTPResponse(status: 200, headers: [("ETag", S3Service.etag(stored.record)), ("x-amz-request-id", requestID)]
                             + expiration(stored.record)
                             + S3Service.checksumHeaders(stored.record, orSHA256: false)
                             + S3Service.versionHeaders(stored.record, self.condition.versioning) + headers)
            }.mapError { $0 })
        }
    }

    func abandon() { stream.abandon() }
}

/// The end of an S3 body (PutObject or UploadPart), on the commit pool: checks the aws-chunked
/// framing, the length and the digests (waiting for the second hashing thread, which is why
/// this runs there), then completes the sink. The bytes reach the sink through `StreamingBody`.
struct S3BodyEnd {
    let service: S3Service
    let sink: any S3BodySink
    /// The aws-chunked framing around the bytes, when the body has it.
    let decoder: AWSChunkedDecoder?
    let payload: S3Service.Payload
    let digests: BodyDigests
    let head: HTTPRequestHead
    /// Whether the caller may still write there (its key may be revoked while the body arrives).
    let recheck: @Sendable () throws -> Void
    let requestID: String

    func complete(failure: (any Error)?, then respond: @escaping (HTTPResponse) -> Void) {
        let verified: (md5: [UInt8], checksum: String?)
        do {
            if let failure { throw failure }
            verified = try verify()
            try recheck()
        } catch {
            sink.abandon()
            return respond(service.failure(S3Error(error), head: head, requestID: requestID))
        }
        sink.complete(md5: verified.md5, checksum: verified.checksum) { [service, head, requestID] result in
            switch result {
            case .success(let response): respond(response)
            case .failure(let error): respond(service.failure(S3Error(error), head: head, requestID: requestID))
            }
        }
    }

    private func verify() throws -> (md5: [UInt8], checksum: String?) {
        if let decoder {
            guard decoder.isComplete else { throw S3Error(.incompleteBody, "The request body ended inside its aws-chunked framing.") }
            if let size = payload.size, decoder.decodedLength != size {
                throw S3Error(.incompleteBody, "The decoded body is \(decoder.decodedLength) bytes, not x-amz-decoded-content-length.")
            }
        }
        let digests = self.digests.values(try sink.digests())
        if let expected = payload.expectedMD5, digests.md5 != expected {
            throw S3Error(.badDigest, "The Content-MD5 you specified did not match what we received.")
        }
        guard let algorithm = payload.checksum, let computed = digests.checksum else { return (digests.md5, nil) }
        let expected: String?
        switch payload.expectedChecksum {
        case .none: expected = nil
        case .header(let value): expected = value
        case .trailer:
            guard let value = decoder?.trailers[algorithm.field] else {
                throw S3Error(.malformedTrailer, "The request contained trailing data that was not well-formed or did not conform to our published schema.")
            }
            guard algorithm.isWellFormed(value) else { throw S3Error(.invalidRequest, "Value for \(algorithm.field) trailing header is invalid.") }
            expected = value
        }
        if let expected, expected != computed {
            throw S3Error(.badDigest, "The \(algorithm.rawValue.uppercased()) you specified did not match the calculated checksum.")
        }
        return (digests.md5, "\(algorithm.rawValue):\(computed)")
    }
}

import BlobStore
import MicroHTTPD

extension BlobService {
    /// PUT (at `key`) or POST (content-addressed, `key` nil): everything that can be decided from
    /// the head is decided here, before any body byte is read; then the body streams to the store.
    func receiveUpload(_ head: HTTPRequestHead, key: BlobKey?) throws -> HTTPRequestAction {
        let expectedSHA256 = try announcedSHA256(head)
        let preconditions = Preconditions(head)
        if let key, !preconditions.isEmpty,
           preconditions.evaluate(current: try store.record(for: key), safe: false) == .failed {
            throw StoreError.preconditionFailed
        }
        let attributes = try Self.attributes(contentType: head["Content-Type"], cacheControl: head["Cache-Control"],
                                             contentDisposition: head["Content-Disposition"],
                                             contentEncoding: head["Content-Encoding"], contentLanguage: head["Content-Language"],
                                             expires: head["Expires"])
        let contentLength = head["Content-Length"].flatMap { UInt64($0) }
        let stream = try store.beginWrite(expectedSize: contentLength, expectedSHA256: expectedSHA256)
        return .receive(UploadConsumer(
            service: self, stream: stream, key: key, attributes: attributes,
            condition: { preconditions.evaluate(current: $0, safe: false) == .proceed }))
    }

    /// DELETE: 204, or 404 when absent (preconditions are not evaluated then, RFC 9110 §13.2.1).
    func delete(_ head: HTTPRequestHead, key: BlobKey) throws -> HTTPResponse {
        let preconditions = Preconditions(head)
        try store.delete(key, if: { preconditions.evaluate(current: $0, safe: false) == .proceed })
        return HTTPResponse(status: 204, headers: [Self.noStore])
    }

    /// The attributes an upload gives its blob (from PUT and POST headers or tus metadata):
    /// each a field value of visible ASCII, spaces and tabs, at most 1024 bytes, or 400; an
    /// absent or empty media type is `application/octet-stream`.
    public static func attributes(contentType: String?, cacheControl: String?, contentDisposition: String?,
                                  contentEncoding: String? = nil, contentLanguage: String? = nil, expires: String? = nil,
                                  userMetadata: [(name: String, value: String)] = []) throws(HTTPError) -> BlobAttributes {
        var metadata: [BlobAttributes.UserMetadatum] = []
        for (name, text) in userMetadata {
            let lowered = name.lowercased()
            guard isToken(lowered), !lowered.contains(":") else { throw .badRequest("The metadata name '\(name)' is not a token.") }
            // One value may take the whole 2 KB that S3 allows for all of them (checked by the S3 dialect).
            metadata.append(.init(name: lowered, value: try fieldValue(text, "x-amz-meta-\(lowered)", maxLength: 2048) ?? ""))
        }
        return BlobAttributes(contentType: try fieldValue(contentType, "Content-Type") ?? "application/octet-stream",
                              cacheControl: try fieldValue(cacheControl, "Cache-Control"),
                              contentDisposition: try fieldValue(contentDisposition, "Content-Disposition"),
                              contentEncoding: try fieldValue(contentEncoding, "Content-Encoding"),
                              contentLanguage: try fieldValue(contentLanguage, "Content-Language"),
                              expires: try fieldValue(expires, "Expires"), userMetadata: metadata)
    }

    /// A stored header value: at most `maxLength` bytes of visible ASCII, spaces and tabs (nil if empty).
    static func fieldValue(_ text: String?, _ name: String, maxLength: Int = 1024) throws(HTTPError) -> String? {
        guard let text else { return nil }
        let trimmed = text.trimmingOWS()
        guard trimmed.utf8.count <= maxLength, trimmed.utf8.allSatisfy({ (0x20...0x7E).contains($0) || $0 == 0x09 }) else {
            throw .badRequest("\(name) must be at most \(maxLength) bytes of visible ASCII, spaces and tabs.")
        }
        return trimmed.isEmpty ? nil : String(trimmed)
    }

    /// The sha-256 of `Content-Digest` (or `Repr-Digest`, the same for an uncoded full PUT).
    private func announcedSHA256(_ head: HTTPRequestHead) throws -> [UInt8]? {
        var found: [UInt8]?
        for name in ["Content-Digest", "Repr-Digest"] {
            let values = head.values(of: name)
            guard !values.isEmpty else { continue }
            guard let digest = try DigestField.sha256(in: values.joined(separator: ", ")) else { continue }
            if let found, found != digest {
                throw HTTPError.badRequest("Content-Digest and Repr-Digest announce different sha-256 digests.")
            }
            found = digest
        }
        return found
    }
}

/// Streams one request body into a `BlobWriteStream` and commits it at the end.
final class UploadConsumer: HTTPBodyConsumer {
    private let service: BlobService
    private let stream: BlobWriteStream
    private let key: BlobKey?
    private let attributes: BlobAttributes
    private let condition: (BlobRecord?) -> Bool
    private var failure: (any Error)?
    private let inFlight: InFlightUpload

    init(service: BlobService, stream: BlobWriteStream, key: BlobKey?, attributes: BlobAttributes,
         condition: @escaping (BlobRecord?) -> Bool) {
        self.service = service
        self.stream = stream
        self.key = key
        self.attributes = attributes
        self.condition = condition
        self.inFlight = InFlightUpload(service.metrics)
    }

    func consume(_ chunk: UnsafeRawBufferPointer) {
        guard failure == nil else { return }
        do {
            try stream.write(chunk)
        } catch {
            failure = error
        }
    }

    /// The fsync runs on the commit pool, the index commit in a group commit; the connection
    /// waits suspended, and gets its answer from the thread that committed its batch.
    func finish(_ responder: HTTPResponder) {
        let handover = Handover(value: self)
        service.committers.submit {
            handover.value.commit { responder.send($0) }
        }
    }

    private func commit(then respond: @escaping (HTTPResponse) -> Void) {
        if let failure {
            inFlight.end()
            return respond(service.failure(failure))
        }
        stream.commit(as: key, attributes: attributes, if: condition) { [self] result in
            inFlight.end()
            switch result {
            case .success(let stored):
                let record = stored.record
                respond(BlobService.jsonResponse(
                    status: stored.created ? 201 : 200, BlobService.json(record),
                    headers: [("ETag", EntityTag(version: record.version).headerValue),
                              ("Location", service.publicLocation(of: record.key))]))
            case .failure(let error):
                respond(service.failure(error))
            }
        }
    }

    func abandon() {
        inFlight.end()
        stream.abandon()
    }
}

import BlobHTTP
import BlobStore
import MicroHTTPD

#if canImport(Glibc)
import Glibc
#endif

extension S3Service {
    /// CopyObject (`PUT` with `x-amz-copy-source`): COPY keeps the source's attributes, REPLACE
    /// takes the request's; a self-copy needs REPLACE. `x-amz-copy-source-if-*` are checked
    /// against the source, `If-Match` / `If-None-Match` against the destination at the commit.
    /// The bytes stream through a new file on the commit pool, checked against the source's
    /// SHA-256 on the way, and are committed atomically like a PUT.
    func copyObject(_ head: HTTPRequestHead, bucket: String, key: String, requestID: String) throws -> HTTPRequestAction {
        let destination = try blobKey(bucket, key)
        let (sourceBucket, sourceKey) = try Self.copySource(head["x-amz-copy-source"] ?? "")
        let source = try blobKey(sourceBucket, sourceKey)
        let directive = (head["x-amz-metadata-directive"] ?? "COPY").uppercased()
        guard directive == "COPY" || directive == "REPLACE" else {
            throw S3Error(.invalidArgument, "Unknown metadata directive.")
        }
        if source == destination && directive == "COPY" {
            throw S3Error(.invalidRequest, "This copy request is illegal because it is trying to copy an object to itself "
                          + "without changing the object's metadata, storage class, website redirect location or encryption attributes.")
        }
        let blob = try store.open(source)
        // The copy-source conditions, as the standard ones on the source.
        let renamed: [(name: String, value: String)] = [
            ("x-amz-copy-source-if-match", "If-Match"), ("x-amz-copy-source-if-none-match", "If-None-Match"),
            ("x-amz-copy-source-if-modified-since", "If-Modified-Since"),
            ("x-amz-copy-source-if-unmodified-since", "If-Unmodified-Since"),
        ].compactMap { from, to in head[from].map { (to, $0) } }
        let sourceConditions = Preconditions(HTTPRequestHead(method: "GET", path: [], headers: renamed))
        guard sourceConditions.evaluate(current: blob.record, safe: true, entityTag: Self.entityTag) == .proceed else {
            throw S3Error(.preconditionFailed, "At least one of the pre-conditions you specified did not hold.")
        }
        let attributes = directive == "REPLACE" ? try Self.attributes(head) : blob.record.attributes
        let preconditions = Preconditions(head)
        let stream = try store.beginWrite(expectedSize: blob.record.size, expectedSHA256: blob.record.sha256)
        return .receive(CopyJob(service: self, source: blob, stream: stream, destination: destination, attributes: attributes,
                                head: head, requestID: requestID,
                                condition: { preconditions.evaluate(current: $0, safe: false, entityTag: Self.entityTag) == .proceed }))
    }

    /// `x-amz-copy-source`: `[/]BUCKET/KEY[?versionId=…]`, percent-encoded.
    static func copySource(_ header: String) throws(S3Error) -> (bucket: String, key: String) {
        var text = Substring(header)
        if let mark = text.firstIndex(of: "?") {
            let version = text[text.index(after: mark)...]
            guard version == "versionId=null" || version.isEmpty else {
                throw S3Error(.invalidArgument, "blobd keeps no versions; only versionId=null can be copied.")
            }
            text = text[..<mark]
        }
        if text.first == "/" { text = text.dropFirst() }
        guard let decoded = PercentEncoding.decode(Array(text.utf8)), let path = String(validating: decoded, as: UTF8.self),
              let slash = path.firstIndex(of: "/"), slash != path.startIndex, path.index(after: slash) != path.endIndex else {
            throw S3Error(.invalidArgument, "x-amz-copy-source must be BUCKET/KEY, percent-encoded.")
        }
        return (String(path[..<slash]), String(path[path.index(after: slash)...]))
    }
}

/// Runs a CopyObject on the commit pool once the (empty) request body is in.
final class CopyJob: HTTPBodyConsumer {
    private let service: S3Service
    private let source: OpenBlob
    private let stream: BlobWriteStream
    private let destination: BlobKey
    private let attributes: BlobAttributes
    private let head: HTTPRequestHead
    private let requestID: String
    private let condition: (BlobRecord?) -> Bool

    init(service: S3Service, source: OpenBlob, stream: BlobWriteStream, destination: BlobKey, attributes: BlobAttributes,
         head: HTTPRequestHead, requestID: String, condition: @escaping (BlobRecord?) -> Bool) {
        self.service = service
        self.source = source
        self.stream = stream
        self.destination = destination
        self.attributes = attributes
        self.head = head
        self.requestID = requestID
        self.condition = condition
    }

    func consume(_ chunk: UnsafeRawBufferPointer) {}

    func finish(_ responder: HTTPResponder) {
        let handover = Handover(value: self)
        service.committers.submit {
            handover.value.run { responder.send($0) }
        }
    }

    private func run(then respond: @escaping (HTTPResponse) -> Void) {
        do {
            let descriptor = try source.takeDescriptor()
            defer { close(descriptor) }
            try stream.write(contentsOf: descriptor, count: source.record.size)
        } catch {
            stream.abandon()
            return respond(service.failure(S3Error(error), head: head, requestID: requestID))
        }
        stream.commit(as: destination, attributes: attributes, md5: source.record.md5, parts: source.record.parts, if: condition) { [self] result in
            switch result {
            case .success(let stored):
                let xml = XML.declaration + "<CopyObjectResult xmlns=\"\(XML.namespace)\">"
                    + XML.element("LastModified", S3Service.isoDate(stored.record.modified))
                    + XML.element("ETag", S3Service.etag(stored.record)) + "</CopyObjectResult>"
                respond(service.xmlResponse(xml, requestID: requestID))
            case .failure(let error):
                respond(service.failure(S3Error(error), head: head, requestID: requestID))
            }
        }
    }

    func abandon() {
        stream.abandon()
    }
}

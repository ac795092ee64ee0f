import HTTPCore
import BlobStore
import MicroHTTPD
import Access

extension S3Service {
    /// Largest DeleteObjects body read. It is read as it arrives, and what a connection keeps of
    /// it is its keys, not the body (see `DeleteObjectsBody`). The bound is what 1,000 keys can
    /// need: a key of 1,024 bytes escaped at worst (6 bytes for one: `&quot;`) is 6,144 bytes,
    /// and its Object's other elements (VersionId, ETag, LastModifiedTime, Size) and whitespace
    /// take well under 2 KiB: 1,000 × 8 KiB.
    static let maxDeleteBody = 1000 * 8 * 1024
    /// Keys one DeleteObjects takes at most, as in S3.
    static let maxDeleteKeys = 1000

    /// DeleteObjects (`POST /BUCKET?delete`): up to 1000 keys, Quiet supported, no Content-MD5
    /// needed. Each key is deleted on its own; a key that is absent counts as deleted, as in S3.
    func receiveDeleteObjects(_ head: HTTPRequestHead, bucket: String, caller: Principal, requestID: String) throws -> HTTPRequestAction {
        try requireBucket(bucket)
        if let length = head["Content-Length"].flatMap(UInt64.init), length > UInt64(Self.maxDeleteBody) {
            throw S3Error(.invalidRequest, "The DeleteObjects request body is too large.")
        }
        let expected = try Self.bufferedPayloadHash(head)
        return .receive(DeleteObjectsBody(expectedSHA256: expected, committers: committers) { [self] request in
            do {
                return try deleteObjects(try request.get(), head: head, bucket: bucket, caller: caller, requestID: requestID)
            } catch {
                return failure(error, head: head, bucket: bucket, key: nil, requestID: requestID)
            }
        })
    }

    /// Deletes each key the caller may delete; each other one gets an AccessDenied entry.
    private func deleteObjects(_ request: DeleteObjectsBody.Request, head: HTTPRequestHead, bucket: String, caller: Principal,
                               requestID: String) throws -> HTTPResponse {
        var xml = XML.declaration + "<DeleteResult xmlns=\"\(XML.namespace)\">"
        for entry in request.entries {
            let key = entry.key
            do {
                let blobKey = try self.blobKey(bucket, key)
                guard caller.grants.allows(.delete, key: blobKey.rawValue.utf8) else {
                    throw S3Error(.accessDenied, "Access Denied")
                }
                let condition = try Self.deleteCondition(ifMatch: entry.etag.map { [$0] } ?? [], modified: entry.lastModified,
                                                         size: entry.size)
                let outcome = try delete(blobKey, versionID: entry.versionID, if: condition,
                                         bypassingGovernance: Self.bypassesGovernance(head, bucket: bucket, caller: caller)) { name in
                    events(name, blobKey, head, requestID)
                }
                if !request.quiet { xml += Self.deletedXML(key, outcome) }
            } catch {
                let failure = S3Error(error)
                xml += "<Error>" + XML.element("Key", key) + (entry.versionID.map { XML.element("VersionId", $0) } ?? "")
                    + XML.element("Code", failure.code.rawValue)
                    + XML.element("Message", failure.message) + "</Error>"
            }
        }
        xml += "</DeleteResult>"
        return xmlResponse(xml, requestID: requestID)
    }
}

/// DeleteObjects' body, read as it arrives. What a connection keeps of it is its keys (at most
/// 1,000, each cut after 1,025 bytes: a longer key is answered KeyTooLongError anyway) and
/// Quiet, so at most about 1 MB however the body is written, not the body itself. The body's
/// SHA-256 is checked (when signed) before anything is deleted.
final class DeleteObjectsBody: HTTPBodyConsumer {
    struct Request {
        var entries: [Entry] = []
        var quiet = false
    }

    /// One Object of the body: its Key, and the conditions its delete names.
    struct Entry {
        var key: String
        var etag: String?
        var lastModified: String?
        var size: String?
        var versionID: String?
    }

    private var reader = XMLReader(maxElements: S3Service.maxDeleteKeys * 8 + 8)
    private var hasher = SHA256Hasher()
    private let expectedSHA256: [UInt8]?
    private var received = 0
    private var failure: S3Error?
    private var request = Request()
    /// The Key of the Object being read, its other elements (each cut after 128 bytes: no
    /// valid ETag, time or size is longer), and the text of Quiet.
    private var key: [UInt8]?
    private var fields: [String: [UInt8]] = [:]
    private var quiet: [UInt8] = []
    static let conditionElements: Set<String> = ["ETag", "LastModifiedTime", "Size", "VersionId"]
    private let committers: BlockingPool
    private let respond: (Result<Request, any Error>) -> HTTPResponse

    init(expectedSHA256: [UInt8]?, committers: BlockingPool, respond: @escaping (Result<Request, any Error>) -> HTTPResponse) {
        self.expectedSHA256 = expectedSHA256
        self.committers = committers
        self.respond = respond
    }

    func consume(_ chunk: UnsafeRawBufferPointer) {
        if expectedSHA256 != nil { hasher.update(chunk) }
        received += chunk.count
        guard failure == nil else { return }
        do throws(S3Error) {
            guard received <= S3Service.maxDeleteBody else { throw S3Error(.invalidRequest, "The DeleteObjects request body is too large.") }
            try reader.feed(chunk) { [unowned self] event, path throws(S3Error) in try collect(event, path) }
        } catch {
            failure = error
        }
    }

    /// Keeps what DeleteObjects needs of one event.
    private func collect(_ event: XMLReader.Event, _ path: [String]) throws(S3Error) {
        guard path[0] == "Delete" else { throw XMLReader.malformed }
        switch (event, path.count, path.last) {
        case (.start, 2, "Object"?):
            guard request.entries.count < S3Service.maxDeleteKeys else { throw S3Error(.malformedXML, "DeleteObjects takes at most 1000 keys.") }
            key = nil
            fields = [:]
        case (.start, 3, let name?) where path[1] == "Object" && Self.conditionElements.contains(name):
            fields[name] = []
        case (.text(let text), 3, let name?) where path[1] == "Object" && Self.conditionElements.contains(name):
            let room = max(0, 128 - (fields[name]?.count ?? 0))
            fields[name]?.append(contentsOf: text.utf8.prefix(room))
        case (.start, 3, "Key"?) where path[1] == "Object":
            key = []
        case (.text(let text), 3, "Key"?) where path[1] == "Object":
            let room = max(0, 1025 - (key?.count ?? 0))
            key?.append(contentsOf: text.utf8.prefix(room))
        case (.end, 2, "Object"?):
            guard let key else { throw S3Error(.malformedXML, "Every Object needs a Key.") }
            func text(_ name: String) -> String? { fields[name].map { String(decoding: $0, as: UTF8.self).trimmingCharacters() } }
            request.entries.append(Entry(key: String(decoding: key, as: UTF8.self), etag: text("ETag"),
                                         lastModified: text("LastModifiedTime"), size: text("Size"), versionID: text("VersionId")))
        case (.text(let text), 2, "Quiet"?):
            let room = max(0, 16 - quiet.count)
            quiet.append(contentsOf: text.utf8.prefix(room))
        default:
            break
        }
    }

    func finish(_ responder: HTTPResponder) {
        let result = Result<Request, any Error> {
            if let expectedSHA256, hasher.finalize() != expectedSHA256 {
                throw S3Error(.contentSHA256Mismatch, "The provided 'x-amz-content-sha256' header does not match what was computed.")
            }
            if let failure { throw failure }
            try reader.finish { [unowned self] event, path throws(S3Error) in try collect(event, path) }
            guard !request.entries.isEmpty else { throw XMLReader.malformed }
            request.quiet = String(decoding: quiet, as: UTF8.self).trimmingCharacters() == "true"
            return request
        }
        let handover = Handover(value: (respond, result))
        committers.submit {
            responder.send(handover.value.0(handover.value.1))
        }
    }

    func abandon() {}
}

extension S3Service {
    /// The SHA-256 a small XML body (DeleteObjects, Complete) must have: the signed hex digest,
    /// or nil for UNSIGNED-PAYLOAD. Such bodies are not accepted aws-chunked.
    static func bufferedPayloadHash(_ head: HTTPRequestHead) throws -> [UInt8]? {
        switch head["x-amz-content-sha256"] {
        case nil, "UNSIGNED-PAYLOAD": return nil
        case let value? where value.hasPrefix("STREAMING-"):
            throw S3Error(.invalidRequest, "This request's body cannot be sent aws-chunked.")
        case let value?:
            guard let digest = hexBytes(value), digest.count == 32 else {
                throw S3Error(.invalidArgument, "x-amz-content-sha256 must be UNSIGNED-PAYLOAD or a hex SHA-256.")
            }
            return digest
        }
    }

    /// Throws unless `body` has the SHA-256 `expected` (when given).
    static func check(_ body: [UInt8]?, against expected: [UInt8]?) throws {
        guard let expected else { return }
        guard let body, SHA256Hasher.hash(body) == expected else {
            throw S3Error(.contentSHA256Mismatch, "The provided 'x-amz-content-sha256' header does not match what was computed.")
        }
    }
}

extension String {
    /// Without leading and trailing whitespace.
    func trimmingCharacters() -> String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}

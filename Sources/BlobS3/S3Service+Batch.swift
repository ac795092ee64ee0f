import BlobHTTP
import BlobStore
import MicroHTTPD

extension S3Service {
    /// Largest DeleteObjects body read (1000 keys of 1024 bytes, escaped, with their tags).
    static let maxDeleteBody = 8 * 1024 * 1024

    /// DeleteObjects (`POST /BUCKET?delete`): up to 1000 keys, Quiet supported, no Content-MD5
    /// needed. Each key is deleted on its own; a key that is absent counts as deleted, as in S3.
    func receiveDeleteObjects(_ head: HTTPRequestHead, bucket: String, requestID: String) throws -> HTTPRequestAction {
        try requireBucket(bucket)
        if let length = head["Content-Length"].flatMap(Int.init), length > Self.maxDeleteBody {
            throw S3Error(.invalidRequest, "The DeleteObjects request body is too large.")
        }
        let expected = try Self.bufferedPayloadHash(head)
        return .receive(BufferedBody(limit: Self.maxDeleteBody, committers: committers) { [self] body in
            do {
                try Self.check(body, against: expected)
                return try deleteObjects(body, bucket: bucket, requestID: requestID)
            } catch {
                return failure(error, head: head, bucket: bucket, key: nil, requestID: requestID)
            }
        })
    }

    private func deleteObjects(_ body: [UInt8]?, bucket: String, requestID: String) throws -> HTTPResponse {
        guard let body, let text = String(validating: body, as: UTF8.self) else {
            throw S3Error(.malformedXML, "The XML you provided was not well-formed or did not validate against our published schema.")
        }
        let objects = XML.elements("Object", in: text)
        guard text.contains("<Delete"), !objects.isEmpty else {
            throw S3Error(.malformedXML, "The XML you provided was not well-formed or did not validate against our published schema.")
        }
        guard objects.count <= 1000 else {
            throw S3Error(.malformedXML, "DeleteObjects takes at most 1000 keys.")
        }
        let quiet = XML.elements("Quiet", in: text).first.map { XML.unescape($0).trimmingCharacters() == "true" } ?? false
        var xml = XML.declaration + "<DeleteResult xmlns=\"\(XML.namespace)\">"
        for object in objects {
            guard let rawKey = XML.elements("Key", in: object).first else {
                throw S3Error(.malformedXML, "Every Object needs a Key.")
            }
            let key = XML.unescape(rawKey)
            do {
                let blobKey = try self.blobKey(bucket, key)
                do {
                    try store.delete(blobKey)
                } catch {
                    if error != .notFound { throw error }
                }
                if !quiet { xml += "<Deleted>" + XML.element("Key", key) + "</Deleted>" }
            } catch {
                let failure = S3Error(error)
                xml += "<Error>" + XML.element("Key", key) + XML.element("Code", failure.code.rawValue)
                    + XML.element("Message", failure.message) + "</Error>"
            }
        }
        xml += "</DeleteResult>"
        return xmlResponse(xml, requestID: requestID)
    }
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

/// Reads a small request body into memory (up to `limit` bytes; nil past it), then answers
/// with `respond`: on the worker thread, or on `committers` when the answer takes long work.
final class BufferedBody: HTTPBodyConsumer {
    private var bytes: [UInt8] = []
    private var overflow = false
    private let limit: Int
    private let committers: WorkerPool?
    private let respond: ([UInt8]?) -> HTTPResponse

    init(limit: Int, committers: WorkerPool? = nil, respond: @escaping ([UInt8]?) -> HTTPResponse) {
        self.limit = limit
        self.committers = committers
        self.respond = respond
    }

    func consume(_ chunk: UnsafeRawBufferPointer) {
        guard !overflow else { return }
        if bytes.count + chunk.count > limit {
            overflow = true
            bytes = []
            return
        }
        bytes += chunk
    }

    func finish(_ responder: HTTPResponder) {
        guard let committers else { return responder.send(respond(overflow ? nil : bytes)) }
        let handover = Handover(value: (respond, overflow ? nil : bytes))
        committers.submit {
            responder.send(handover.value.0(handover.value.1))
        }
    }

    func abandon() {}
}

extension XML {
    /// The contents of every `<name>…</name>` (or `<name attr…>…</name>`) in `text`, in order,
    /// not nested in one another.
    static func elements(_ name: String, in text: String) -> [String] {
        var found: [String] = []
        var rest = text[...]
        while let open = rest.range(of: "<" + name) {
            let afterName = rest[open.upperBound...]
            guard let next = afterName.first, next == ">" || next == " " || next == "\t" || next == "\n" || next == "\r",
                  let close = afterName.range(of: ">") else {
                rest = afterName
                continue
            }
            let content = afterName[close.upperBound...]
            guard let end = content.range(of: "</" + name + ">") else { break }
            found.append(String(content[..<end.lowerBound]))
            rest = content[end.upperBound...]
        }
        return found
    }

    /// Element text with its five entities and numeric character references decoded.
    static func unescape(_ text: String) -> String {
        guard text.contains("&") else { return text }
        var out = ""
        var rest = text[...]
        while let amp = rest.firstIndex(of: "&") {
            out += rest[..<amp]
            guard let semicolon = rest[amp...].firstIndex(of: ";") else {
                out += rest[amp...]
                return out
            }
            let entity = rest[rest.index(after: amp)..<semicolon]
            switch entity {
            case "amp": out += "&"
            case "lt": out += "<"
            case "gt": out += ">"
            case "quot": out += "\""
            case "apos": out += "'"
            default:
                var scalar: Unicode.Scalar?
                if entity.hasPrefix("#x") || entity.hasPrefix("#X") {
                    scalar = UInt32(entity.dropFirst(2), radix: 16).flatMap(Unicode.Scalar.init)
                } else if entity.hasPrefix("#") {
                    scalar = UInt32(entity.dropFirst()).flatMap(Unicode.Scalar.init)
                }
                if let scalar { out.unicodeScalars.append(scalar) } else { out += rest[amp...semicolon] }
            }
            rest = rest[rest.index(after: semicolon)...]
        }
        return out + rest
    }
}

extension String {
    /// Without leading and trailing whitespace.
    func trimmingCharacters() -> String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}

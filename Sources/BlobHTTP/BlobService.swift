import BlobStore
import Logging
import MicroHTTPD

/// The blobd HTTP API: routes each request to the store. Every failure becomes a `Problem`.
public final class BlobService: HTTPHandler {
    /// The store served.
    public let store: BlobStore
    let logger: Logger

    /// Serves `store`.
    public init(store: BlobStore, logger: Logger = Logger(label: "blobd.http")) {
        self.store = store
        self.logger = logger
    }

    /// The routes blobd answers.
    enum Route {
        case blobs
        case blob(rawKey: ArraySlice<UInt8>)
        case health

        var allowedMethods: [String] {
            switch self {
            case .blobs: ["GET", "HEAD", "POST"]
            case .blob: ["GET", "HEAD", "PUT", "DELETE"]
            case .health: ["GET", "HEAD"]
            }
        }
    }

    public func handle(_ head: HTTPRequestHead) -> HTTPRequestAction {
        do {
            try checkFraming(head)
            let route = try Self.route(head.path)
            guard route.allowedMethods.contains(head.method) else {
                throw HTTPError.methodNotAllowed(allowed: route.allowedMethods)
            }
            switch (route, head.method) {
            case (.health, _):
                return .respond(HTTPResponse(status: 200, headers: [("Content-Type", "text/plain")],
                                             body: .bytes(Array("ok\n".utf8))))
            case (.blobs, "POST"):
                return try receiveUpload(head, key: nil)
            case (.blobs, _):
                return .respond(try list(head))
            case (.blob(let rawKey), "PUT"):
                return try receiveUpload(head, key: Self.key(rawKey))
            case (.blob(let rawKey), "DELETE"):
                return .respond(try delete(head, key: Self.key(rawKey)))
            case (.blob(let rawKey), _):
                return .respond(try read(head, key: Self.key(rawKey)))
            }
        } catch {
            return .respond(Problem(error).response)
        }
    }

    /// Maps a raw path to a route.
    static func route(_ path: [UInt8]) throws(HTTPError) -> Route {
        let prefix = Array("/v1/blobs".utf8)
        if path.starts(with: prefix) {
            let rest = path[prefix.count...]
            if rest.isEmpty { return .blobs }
            if rest.first == UInt8(ascii: "/") { return .blob(rawKey: rest.dropFirst()) }
        }
        if path.elementsEqual("/healthz".utf8) { return .health }
        throw .noRoute
    }

    /// Decodes and validates a key from the path: strict percent-decoding, then the key rules.
    static func key(_ raw: ArraySlice<UInt8>) throws -> BlobKey {
        guard let bytes = PercentEncoding.decode(raw) else {
            throw HTTPError.badRequest("The key has an invalid percent-encoding (a % must be followed by two hex digits).")
        }
        return try BlobKey(validating: bytes)
    }

    /// RFC 9112 framing rules that protect against request smuggling.
    private func checkFraming(_ head: HTTPRequestHead) throws(HTTPError) {
        let lengths = head.values(of: "Content-Length")
        if lengths.count > 1 { throw .malformedMessage("The request has more than one Content-Length.") }
        if let length = lengths.first, length.isEmpty || !length.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
            throw .malformedMessage("Content-Length must be a non-negative decimal number.")
        }
        if !lengths.isEmpty && head["Transfer-Encoding"] != nil {
            throw .malformedMessage("The request has both Content-Length and Transfer-Encoding.")
        }
        if head.values(of: "Host").count > 1 { throw .malformedMessage("The request has more than one Host.") }
    }

    /// The `Location` of a key.
    static func location(of key: BlobKey) -> String {
        "/v1/blobs/" + PercentEncoding.encodePath(key.rawValue)
    }

    /// The JSON description of a blob, as PUT, POST and the listing return it.
    static func json(_ record: BlobRecord) -> JSON {
        .object([
            ("key", .string(record.key.rawValue)),
            ("size", .number(Int64(record.size))),
            ("sha256", .string(record.sha256Hex)),
            ("etag", .string(EntityTag(version: record.version).headerValue)),
            ("content_type", .string(record.contentType)),
            ("modified", .string(HTTPDate.formatRFC3339(record.modified))),
        ])
    }

    /// A JSON response.
    static func jsonResponse(status: Int, _ json: JSON, headers: [(name: String, value: String)] = []) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json")] + headers,
                     body: .bytes(Array(json.serialized().utf8)))
    }
}

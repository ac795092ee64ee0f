import BlobStore
import HTTPCore
import Logging
import MicroHTTPD
import Webhooks
import Access
import Observability
import TusHooks

/// The blobd HTTP API: authorizes each request and routes it to the store. Every failure
/// becomes a `Problem` in `failure(_:)`.
public final class BlobService: HTTPHandler {
    /// The store served.
    public let store: BlobStore
    /// Who may do what.
    public let access: AccessPolicy
    /// Request and error counters.
    public let metrics: Metrics
    /// Seconds a resumable upload may sit idle before it expires.
    public let uploadLifetime: Int64
    /// Threads that make uploads durable (fsync, link, index commit) off the HTTP workers.
    public let committers: BlockingPool
    let logger: Logger
    /// One line per request; nil for none.
    let accessLog: AccessLog?
    /// The outside URL of this listener (`--public-url`), without a trailing slash, put before
    /// the path of every `Location` and `Content-Location`; "" for relative references.
    let publicURL: String
    /// Which CORS rules answer which request (`--cors-origin`, the buckets' rules).
    let cors: CORSPolicy
    /// tusd's blocking hooks (`--hook-url`), when configured.
    let hooks: BlockingHooks?
    /// Which changes the buckets' subscriptions want events of.
    let events: EventRouter
    /// The web page at /ui/; nil with `--no-ui`.
    let webUI: WebUI?

    /// Serves `store`.
    public init(store: BlobStore, access: AccessPolicy, metrics: Metrics = Metrics(), uploadLifetime: Int64 = 24 * 3600,
                commitThreads: Int = 32, logger: Logger = Logger(label: "blobd.http"), accessLog: AccessLog? = nil,
                publicURL: String = "", webUI: WebUI? = nil, hooks: BlockingHooks? = nil, events: EventRouter? = nil, cors: CORSSettings = CORSSettings()) {
        self.hooks = hooks
        self.events = events ?? EventRouter(store.settings)
        self.store = store
        self.webUI = webUI
        self.cors = CORSPolicy(cors, buckets: store.settings)
        self.publicURL = publicURL
        self.accessLog = accessLog
        self.committers = BlockingPool(name: "blobd-commit", threads: commitThreads)
        self.access = access
        self.metrics = metrics
        self.uploadLifetime = uploadLifetime
        self.logger = logger
    }

    public func handle(_ request: HTTPRequestHead) -> HTTPRequestAction {
        var isTus = false
        do {
            try HTTPFraming.check(request)
            // Before authentication: a browser sends no credentials with a preflight.
            if CORSPolicy.isPreflight(request) { return .respond(preflight(request)) }
            let (route, parameter) = try Self.route(request.path)
            isTus = route.isTus
            let head = isTus ? Self.applyingMethodOverride(request) : request
            guard let method = route.methods.first(where: { $0.name == head.method }) else {
                throw HTTPError.methodNotAllowed(allowed: route.allowed)
            }
            let caller = try access.authorize(head, requirement(method.need, head, parameter))
            return try method.handler(self, head, parameter, caller)
        } catch {
            var response = failure(error)
            if isTus { response.headers.append(Self.tusResumable) }
            return .respond(response)
        }
    }

    /// A request whose commit has not answered when the server stops: 503, try again. The
    /// commit may still finish; a client that retries a PUT stores the same bytes again.
    public func shutdownResponse() -> HTTPResponse {
        var response = failure(HTTPError.unavailable(HTTPError.shutdownNotice))
        response.headers.append(("Connection", "close"))
        return response
    }

    /// The one way an error becomes a response: counted (a refusal by its reason too), logged
    /// when it is the server's fault.
    func failure(_ error: any Error) -> HTTPResponse {
        let problem = Problem(error)
        metrics.recordError(kind: problem.slug)
        if let refusal = AuthRefusal(error) { metrics.recordRefusal(dialect: .v1, reason: refusal) }
        if problem.status >= 500 {
            logger.error("Request failed", metadata: ["error": "\(error)"])
        }
        return problem.response
    }

    /// Access log and metrics, once per request.
    public func requestCompleted(_ summary: HTTPRequestSummary) {
        let match = try? Self.route(summary.head.path)
        let label = match?.route.label ?? "other"
        let method = ["GET", "HEAD", "PUT", "POST", "DELETE", "PATCH", "OPTIONS"].contains(summary.head.method)
            ? summary.head.method : "OTHER"
        metrics.recordRequest(method: method, route: label, status: summary.status, duration: summary.duration,
                              received: summary.bytesReceived, sent: summary.completed ? summary.bytesSent : 0)
        guard let accessLog else { return }
        var key: String?
        if let match, match.route.parameterIsKey {
            key = String(decoding: PercentEncoding.decode(match.parameter) ?? Array(match.parameter), as: UTF8.self)
        }
        accessLog.record(summary, route: label, key: key)
    }

    /// Decodes and validates a key from the path: strict percent-decoding, then the key rules.
    static func key(_ raw: ArraySlice<UInt8>) throws -> BlobKey {
        // Intermediaries rewrite `//` and strip trailing slashes: a slash of the key's own that
        // would make an empty segment in the path travels as %2F.
        let slash = UInt8(ascii: "/")
        if raw.first == slash || raw.last == slash || zip(raw, raw.dropFirst()).contains(where: { $0 == slash && $1 == slash }) {
            throw HTTPError.badRequest("The key's path has an empty segment; send a slash that belongs to the key as %2F.")
        }
        guard let bytes = PercentEncoding.decode(raw) else {
            throw HTTPError.badRequest("The key has an invalid percent-encoding (a % must be followed by two hex digits).")
        }
        return try BlobKey(validating: bytes)
    }

    /// 200 when the index answers, the data directory is writable and free space is above the minimum.
    func ready() throws -> HTTPResponse {
        do {
            try store.checkReady()
        } catch StoreError.insufficientStorage {
            throw HTTPError.unavailable("Free space in the data directory is below --min-free-bytes.")
        } catch {
            // The answer is anonymous: the details (paths, the index's own words) go to the log only.
            logger.warning("Not ready", metadata: ["error": "\(error)"])
            throw HTTPError.unavailable("The data directory or its index is not usable; the log says why.")
        }
        return Self.textResponse("ready\n")
    }

    /// tus 1.0.0: `X-HTTP-Method-Override` on a POST is the request's method, for clients and
    /// proxies that cannot send PATCH or DELETE.
    static func applyingMethodOverride(_ head: HTTPRequestHead) -> HTTPRequestHead {
        guard head.method == "POST", let method = head["X-HTTP-Method-Override"]?.trimmingOWS(), !method.isEmpty else {
            return head
        }
        return HTTPRequestHead(method: String(method).uppercased(), path: head.path, version: head.version,
                               headers: head.headers, query: head.query, peer: head.peer, isStrictlyFramed: head.isStrictlyFramed,
                               annotation: head.annotation)
    }

    /// The `Location` of a key, under `--public-url`.
    func publicLocation(of key: BlobKey) -> String {
        publicURL + Self.location(of: key)
    }

    /// The `Location` of an upload, under `--public-url`.
    func publicLocation(ofUpload id: String) -> String {
        publicURL + Self.location(ofUpload: id)
    }

    /// The path of a key.
    static func location(of key: BlobKey) -> String {
        let text = key.rawValue
        let hasEmptySegment = text.hasPrefix("/") || text.hasSuffix("/") || text.contains("//")
        return "/v1/blobs/" + (hasEmptySegment ? PercentEncoding.encodeComponent(text.utf8) : PercentEncoding.encodePath(text))
    }

    /// The JSON description of a blob, as PUT, POST and the listing return it.
    /// `key`: the name to give it (a share link's listing leaves its prefix out).
    static func json(_ record: BlobRecord, key: String? = nil) -> JSON {
        var members: [(String, JSON)] = [
            ("key", .string(key ?? record.key.rawValue)),
            ("size", .number(Int64(record.size))),
            ("sha256", .string(record.sha256Hex)),
            ("etag", .string(EntityTag(version: record.version).headerValue)),
            ("content_type", .string(record.contentType)),
            ("modified", .string(HTTPDate.formatRFC3339(record.modified))),
        ]
        if let cacheControl = record.cacheControl { members.append(("cache_control", .string(cacheControl))) }
        if let disposition = record.contentDisposition { members.append(("content_disposition", .string(disposition))) }
        return .object(members)
    }

    /// Marks an answer that describes the moment (a listing, a write's outcome, health): no cache
    /// may store it.
    static let noStore: (name: String, value: String) = ("Cache-Control", "no-store")

    /// A JSON response; never cached.
    static func jsonResponse(status: Int, _ json: JSON, headers: [(name: String, value: String)] = []) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json"), noStore] + headers,
                     body: .bytes(json.utf8()))
    }

    /// A 200 text response; never cached.
    static func textResponse(_ text: String, contentType: String = "text/plain; charset=utf-8") -> HTTPResponse {
        HTTPResponse(status: 200, headers: [("Content-Type", contentType), noStore], body: .bytes(Array(text.utf8)))
    }
}

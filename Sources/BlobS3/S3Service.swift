import HTTPCore
import BlobStore
import Logging
import MicroHTTPD
import Webhooks
import Synchronization

#if canImport(Glibc)
import Glibc
import Access
import Observability
import TusHooks
#endif

/// The S3 dialect, path style (`/BUCKET/KEY`), over the same store as /v1: object `K` in
/// bucket `B` is the blob at `/v1/blobs/B/K`. Every failure becomes an `S3Error` in
/// `failure(_:head:)`.
public final class S3Service: HTTPHandler {
    let store: BlobStore
    let access: AccessPolicy
    let metrics: Metrics
    let logger: Logger
    /// Threads that make uploads durable off the HTTP workers.
    public let committers: BlockingPool
    /// One line per request (route `s3`, key `BUCKET/KEY`); nil for none.
    let accessLog: AccessLog?
    /// tusd's blocking hooks (`--hook-url`), when configured.
    let hooks: BlockingHooks?
    /// Which changes the buckets' subscriptions want events of.
    let events: EventRouter
    /// Presigned URLs already verified, so a repeated one skips SigV4's work.
    let verifiedURLs = VerifiedURLs()
    /// Which CORS rules answer which request (`--cors-origin`, the buckets' rules).
    let cors: CORSPolicy
    /// Largest clock skew accepted on a signed request, in seconds (S3's 15 minutes).
    static let maxSkew: Int64 = 15 * 60

    /// Serves `store` with the S3 keys of `access`.
    public init(store: BlobStore, access: AccessPolicy, metrics: Metrics, commitThreads: Int = 16,
                logger: Logger = Logger(label: "blobd.s3"), accessLog: AccessLog? = nil, hooks: BlockingHooks? = nil, events: EventRouter? = nil,
                cors: CORSSettings = CORSSettings()) {
        self.hooks = hooks
        self.events = events ?? EventRouter(store.settings)
        self.store = store
        self.cors = CORSPolicy(cors, buckets: store.settings)
        self.accessLog = accessLog
        self.access = access
        self.metrics = metrics
        self.logger = logger
        self.committers = BlockingPool(name: "blobd-s3-commit", threads: commitThreads)
    }

    /// What a request names.
    enum Target {
        case service
        case bucket(String)
        case object(bucket: String, key: String)

        /// The bucket named, if any.
        var bucket: String? {
            switch self {
            case .service: nil
            case .bucket(let name), .object(let name, _): name
            }
        }

        /// The object key named, if any.
        var key: String? {
            if case .object(_, let key) = self { key } else { nil }
        }
    }

    public func handle(_ head: HTTPRequestHead) -> HTTPRequestAction {
        let requestID = RequestID.next()
        var bucketName: String?
        var objectKey: String?
        do {
            // Before authentication: a browser sends no credentials with a preflight.
            if CORSPolicy.isPreflight(head) {
                try HTTPFraming.check(head)
                return .respond(try preflight(head, requestID: requestID))
            }
            // A presigned URL seen before comes with its query already decoded.
            let presigned = access.isOpen || head["Authorization"] != nil ? nil : VerifiedURLs.Key(head)
            let known = presigned.flatMap { verifiedURLs.entry($0, head: head) }
            guard let query = known?.query ?? PercentEncoding.decodeQuery(head.query ?? []) else {
                throw S3Error(.invalidArgument, "The query string has an invalid percent-encoding.")
            }
            try HTTPFraming.check(head)
            let target = try Self.target(head.path)
            if case .bucket(let name) = target { bucketName = name }
            if case .object(let name, let key) = target { bucketName = name; objectKey = key }
            let authorized = try authenticate(head, query: query, presigned: presigned.map { ($0, known) })
            // The operation sees its own parameters, not the presigned URL's signature; SigV2
            // presigned URLs may carry header fields (a copy source too) in the query.
            let parameters = known?.parameters ?? SigV4.operationParameters(query)
            let sigV2Presigned = authorized != nil && authorized?.signed == nil && head["Authorization"] == nil
            let effectiveHead = sigV2Presigned ? SigV2.queryFieldsAsHeaders(head, query: parameters) : head
            let operation = S3Operation(effectiveHead, target: target, query: sigV2Presigned ? parameters : query)
            let caller = try authorize(authorized, S3Operation.requirement(
                of: operation, method: head.method, target: target, parameters: parameters.map(\.name),
                copySource: effectiveHead["x-amz-copy-source"] != nil,
                prefix: Self.value("prefix", in: parameters).map { Array($0.utf8) } ?? []), noting: head)
            return try perform(operation, effectiveHead, query: parameters, target: target, authorized: authorized,
                               caller: caller, requestID: requestID)
        } catch {
            return .respond(failure(error, head: head, bucket: bucketName, key: objectKey, requestID: requestID))
        }
    }

    /// The error response to a request on `bucket` and `key` (named in the error unless it
    /// names its own).
    func failure(_ error: any Error, head: HTTPRequestHead, bucket: String?, key: String?, requestID: String) -> HTTPResponse {
        var failure = S3Error(error)
        failure.bucket = failure.bucket ?? bucket
        failure.key = failure.key ?? key
        return self.failure(failure, head: head, requestID: requestID)
    }

    /// The decoded value of query parameter `name`.
    static func value(_ name: String, in query: [(name: String, value: [UInt8])]) -> String? {
        query.first { $0.name == name }.map { String(decoding: $0.value, as: UTF8.self) }
    }

    /// A page size (`max-keys`, `max-uploads`, `max-parts`): 1000 when `text` is absent, else a
    /// whole number of at least `least`, of which at most 1000 are given.
    static func pageSize(_ name: String, _ text: String?, least: Int = 0) throws(S3Error) -> Int {
        guard let text else { return 1000 }
        guard let number = Int(text), number >= least else {
            throw S3Error(.invalidArgument, "\(name) must be a \(least > 0 ? "positive" : "non-negative") integer.")
        }
        return min(number, 1000)
    }

    /// The one way an S3 error becomes a response: counted (a refusal by its reason too), logged
    /// when it is the server's fault.
    func failure(_ error: S3Error, head: HTTPRequestHead, requestID: String) -> HTTPResponse {
        metrics.recordError(kind: "s3-" + error.code.rawValue)
        if let refusal = error.refusal { metrics.recordRefusal(dialect: .s3, reason: refusal) }
        if error.code.status >= 500 && error.code != .notImplemented {
            logger.error("S3 request failed", metadata: ["error": "\(error.message)", "code": "\(error.code.rawValue)"])
        }
        return error.response(requestID: requestID, head: head.method == "HEAD")
    }

    public func shutdownResponse() -> HTTPResponse {
        var error = S3Error(.serviceUnavailable, HTTPError.shutdownNotice)
        error.headers = [("Connection", "close"), ("Retry-After", "1")]
        return error.response(requestID: RequestID.next(), head: false)
    }

    public func requestCompleted(_ summary: HTTPRequestSummary) {
        let method = ["GET", "HEAD", "PUT", "POST", "DELETE"].contains(summary.head.method) ? summary.head.method : "OTHER"
        metrics.recordRequest(method: method, route: "s3", status: summary.status, duration: summary.duration,
                              received: summary.bytesReceived, sent: summary.completed ? summary.bytesSent : 0)
        guard let accessLog else { return }
        let key = PercentEncoding.decode(summary.head.path.dropFirst()).map { String(decoding: $0, as: UTF8.self) }
        accessLog.record(summary, route: "s3", key: key.flatMap { $0.isEmpty ? nil : $0 })
    }

    /// `/`, `/BUCKET[/]` or `/BUCKET/KEY` (the key percent-decoded, exactly as sent otherwise).
    static func target(_ path: [UInt8]) throws(S3Error) -> Target {
        guard path.first == UInt8(ascii: "/") else { throw S3Error(.invalidRequest, "The request target must start with /.") }
        let rest = path.dropFirst()
        if rest.isEmpty { return .service }
        let slash = rest.firstIndex(of: UInt8(ascii: "/"))
        guard let rawBucket = PercentEncoding.decode(rest[..<(slash ?? rest.endIndex)]) else {
            throw S3Error(.invalidArgument, "The bucket name has an invalid percent-encoding.")
        }
        let bucket = String(decoding: rawBucket, as: UTF8.self)
        guard let slash, slash + 1 < rest.endIndex else { return .bucket(bucket) }
        guard let rawKey = PercentEncoding.decode(rest[(slash + 1)...]) else {
            throw S3Error(.invalidArgument, "The object key has an invalid percent-encoding.")
        }
        guard let key = String(validating: rawKey, as: UTF8.self) else {
            throw S3Error(.invalidArgument, "The object key is not valid UTF-8.")
        }
        return .object(bucket: bucket, key: key)
    }

    func xmlResponse(_ xml: String, requestID: String, status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/xml"), ("x-amz-request-id", requestID)],
                     body: .bytes(Array(xml.utf8)))
    }

    /// The blob key of object `key` in `bucket`, after checking the bucket exists.
    func blobKey(_ bucket: String, _ key: String) throws -> BlobKey {
        try requireBucket(bucket)
        return try Self.blobKey(bucket, key)
    }

    /// The blob of object `key` in `bucket`, without looking the bucket up.
    static func blobKey(_ bucket: String, _ key: String) throws -> BlobKey {
        guard key.utf8.count <= 1024 else { throw S3Error(.keyTooLong, "Your key is too long.") }
        return try BlobKey(bucket + "/" + key)
    }

    /// Opens object `key` as `store.lookUp` found it. The bucket is looked up only when the
    /// object is not there, to tell NoSuchBucket from NoSuchKey: an object's bucket exists (a
    /// bucket is deleted only when empty), so a GET that finds its object costs one index read.
    func openObject(_ bucket: String, _ key: String, found: BlobRecord?) throws -> OpenBlob {
        do {
            return try store.open(try Self.blobKey(bucket, key), found: found)
        } catch StoreError.notFound {
            try requireBucket(bucket)
            throw StoreError.notFound
        }
    }
}

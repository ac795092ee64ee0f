import BlobStore
import HTTPCore
import MicroHTTPD

/// RFC 9457 problem details, and the one place where an error becomes an HTTP status.
public struct Problem: Equatable, Sendable {
    /// The status code.
    public let status: Int
    /// A short slug naming the problem type (`digest-mismatch`).
    public let slug: String
    /// A short, human-readable summary of the type.
    public let title: String
    /// What happened in this request.
    public let detail: String
    /// Header fields the status requires (Allow, Content-Range, ...).
    public var headers: [(name: String, value: String)] = []

    /// The problem type URI.
    public var type: String { "https://blobd.dev/problems/\(slug)" }

    public static func == (lhs: Problem, rhs: Problem) -> Bool {
        lhs.status == rhs.status && lhs.slug == rhs.slug && lhs.detail == rhs.detail
    }

    /// The error → problem map: every error blobd answers goes through here. The status comes
    /// from the error's failure class (`status(of:)`), but for the two statuses tus and media
    /// types name themselves (460, 415).
    public init(_ error: any Error) {
        if let error = error as? StoreError {
            self.init(error)
        } else if let error = error as? HTTPError {
            self.init(error)
        } else if let error = error as? DigestField.Failure {
            self.init(error.failureClass, "invalid-digest", "Invalid digest field",
                      error == .wrongLength ? "A sha-256 digest must be 32 bytes."
                          : "Content-Digest must be a dictionary like sha-256=:BASE64:.")
        } else {
            self.init(.internal, "internal-error", "Internal server error", "The server could not complete the request.")
        }
    }

    /// The problem of a store failure.
    // long-functions: flat table (one case per error, nothing else), allowed over 60 lines.
    init(_ error: StoreError) {
        switch error {
        case .invalidKey(let reason):
            self.init(error.failureClass, "invalid-key", "Invalid key", reason)
        case .notFound:
            self.init(error.failureClass, "not-found", "Not found", "No blob is stored at this key.")
        case .preconditionFailed:
            self.init(error.failureClass, "precondition-failed", "Precondition failed",
                      "A precondition in If-Match, If-None-Match or If-Unmodified-Since does not hold.")
        case .createOnly:
            self.init(error.failureClass, "forbidden", "Forbidden",
                      "A blob is stored at this key, and the credential may only create (grant 'create'); it was kept.")
        case .tooLarge(let limit):
            self.init(error.failureClass, "too-large", "Content too large", "The blob is larger than the limit of \(limit) bytes.")
        case .digestMismatch(let expected, let actual):
            self.init(error.failureClass, "digest-mismatch", "Digest mismatch",
                      "The body's sha-256 is \(DigestField.format(sha256: actual)), "
                      + "not the announced \(DigestField.format(sha256: expected)); nothing was stored.")
        case .keyNotContentDigest(let actual):
            self.init(error.failureClass, "key-digest-mismatch", "Key is not the content's digest",
                      "A key of 64 hex digits is content-addressed: it may only hold the bytes whose SHA-256 it is. "
                      + "This body's SHA-256 is \(hex(actual)); nothing was stored.")
        case .insufficientStorage, .index(.full):
            self.init(error.failureClass, "insufficient-storage", "Insufficient storage",
                      "The data directory does not have enough free space; nothing was changed.")
        case .uploadNotFound:
            self.init(error.failureClass, "upload-not-found", "Upload not found", "No resumable upload has this id.")
        case .uploadExpired:
            self.init(error.failureClass, "upload-expired", "Upload expired", "The upload was idle past its expiry and was removed.")
        case .offsetMismatch(let current):
            self.init(error.failureClass, "offset-mismatch", "Offset mismatch",
                      "Upload-Offset must be the upload's current offset, \(current).")
            headers = [("Upload-Offset", String(current))]
        case .uploadBusy:
            self.init(error.failureClass, "upload-locked", "Upload locked", "Another request is writing to this upload; retry when it ends.")
        case .lengthConflict:
            self.init(error.failureClass, "length-conflict", "Length conflict",
                      "Upload-Length differs from the upload's length, or is smaller than what has arrived.")
        case .checksumMismatch:
            self.init(error.failureClass, status: 460, "checksum-mismatch", "Checksum mismatch",
                      "The request body does not match Upload-Checksum; it was discarded and the offset is unchanged.")
        case .index(.busy):
            self.init(error.failureClass, "index-busy", "Service unavailable", "The index is busy; retry the request.")
            headers = [("Retry-After", "1")]
        case .index(.unavailable):
            self.init(error.failureClass, "index-unavailable", "Service unavailable", "The index cannot be reached right now; retry later.")
            headers = [("Retry-After", "5")]
        case .invalidPart, .invalidPartOrder, .partTooSmall:
            self.init(error.failureClass, "bad-request", "Bad request", "\(error)")
        case .bucketNotFound:
            self.init(error.failureClass, "not-found", "Not found", "No bucket of this name.")
        case .bucketNotEmpty:
            self.init(error.failureClass, "bucket-not-empty", "Bucket not empty", "The bucket still holds objects.")
        case .uploadStateInvalid:
            self.init(error.failureClass, "upload-state-invalid", "Upload state invalid",
                      "The saved state of this resumable upload is invalid, so it cannot go on; "
                      + "delete it and upload again.")
        case .tooManyUploads(let limit):
            self.init(error.failureClass, "too-many-uploads", "Too many uploads",
                      "This token (or, without tokens, this client address) has \(limit) unfinished uploads, the most "
                      + "blobd allows (--max-open-uploads); finish or terminate some, or let them expire, first.")
        case .keyNotFound:
            self.init(error.failureClass, "not-found", "Not found", "No key has this id.")
        case .shareNotFound:
            self.init(error.failureClass, "not-found", "Not found", "No share link has this id.")
        case .keyConflict(let detail):
            self.init(error.failureClass, "conflict", "Conflict", "A key with this \(detail) exists already.")
        case .objectLocked:
            self.init(error.failureClass, "object-locked", "Object locked",
                      "This version is under Object Lock (a retention in force or a legal hold); it cannot be removed yet.")
        case .dataDirectoryLocked, .dataDirectoryIsShared, .io, .index(.corrupt), .index(.failed):
            self.init(error.failureClass, "internal-error", "Internal server error", "The server could not complete the request.")
        }
    }

    /// The problem of a failure the HTTP layer decided.
    init(_ error: HTTPError) {
        switch error {
        case .badRequest(let detail):
            self.init(error.failureClass, "bad-request", "Bad request", detail)
        case .digestMismatch(let detail):
            self.init(error.failureClass, "digest-mismatch", "Digest mismatch", detail)
        case .malformedMessage(let detail):
            self.init(error.failureClass, "malformed-message", "Malformed HTTP message", detail)
            headers = [("Connection", "close")]
        case .noRoute:
            self.init(error.failureClass, "not-found", "Not found", "There is no resource at this path.")
        case .settingNotFound(let detail):
            self.init(error.failureClass, "setting-not-found", "Setting not found", detail)
        case .methodNotAllowed(let allowed):
            self.init(error.failureClass, "method-not-allowed", "Method not allowed",
                      "This resource supports \(allowed.joined(separator: ", ")).")
            headers = [("Allow", allowed.joined(separator: ", "))]
        case .unauthorized(_, let detail):
            self.init(error.failureClass, "unauthorized", "Unauthorized", detail)
            headers = [("WWW-Authenticate", "Bearer realm=\"blobd\"")]
        case .forbidden(let requirement):
            self.init(error.failureClass, "forbidden", "Forbidden", "The token's grants do not allow this: it needs \(requirement).")
            headers = [("WWW-Authenticate", "Bearer realm=\"blobd\", error=\"insufficient_scope\", scope=\"\(requirement.action)\"")]
        case .unsupportedMediaType(let detail):
            self.init(error.failureClass, status: 415, "unsupported-media-type", "Unsupported media type", detail)
        case .tusVersionUnsupported:
            self.init(error.failureClass, "tus-version", "Unsupported tus version",
                      "This request needs the header Tus-Resumable: 1.0.0, the version blobd speaks.")
            headers = [("Tus-Version", "1.0.0")]
        case .notImplemented(let detail):
            self.init(error.failureClass, "not-implemented", "Not implemented", detail)
            headers = [("Connection", "close")]
        case .unavailable(let detail):
            self.init(error.failureClass, "unavailable", "Service unavailable", detail)
            headers = [("Retry-After", "1")]
        case .conflict(let detail):
            self.init(error.failureClass, "conflict", "Conflict", detail)
        case .corsNotAllowed:
            self.init(error.failureClass, "cors-not-allowed", "CORS request not allowed",
                      "No CORS rule allows this origin, method and these headers here (--cors-origin, or the bucket's rules).")
        case .rangeNotSatisfiable(let size):
            self.init(error.failureClass, "range-not-satisfiable", "Range not satisfiable",
                      "No requested range overlaps the blob's \(size) bytes.")
            headers = [("Content-Range", "bytes */\(size)")]
        }
    }

    /// The /v1 status of each failure class.
    public static func status(of failure: FailureClass) -> Int {
        switch failure {
        case .badRequest: 400
        case .unauthenticated: 401
        case .forbidden: 403
        case .notFound: 404
        case .gone: 410
        case .methodNotAllowed: 405
        case .conflict: 409
        case .locked: 423
        case .preconditionFailed: 412
        case .tooLarge: 413
        case .rangeNotSatisfiable: 416
        case .tooManyRequests: 429
        case .notImplemented: 501
        case .unavailable: 503
        case .insufficientStorage: 507
        case .`internal`: 500
        }
    }

    private init(_ failure: FailureClass, status: Int? = nil, _ slug: String, _ title: String, _ detail: String) {
        self.status = status ?? Self.status(of: failure)
        self.slug = slug
        self.title = title
        self.detail = detail
    }

    /// The `application/problem+json` response.
    public var response: HTTPResponse {
        let body = JSON.object([
            ("type", .string(type)), ("title", .string(title)),
            ("status", .number(Int64(status))), ("detail", .string(detail)),
        ])
        return HTTPResponse(status: status,
                            headers: [("Content-Type", "application/problem+json"), ("Cache-Control", "no-store")] + headers,
                            body: .bytes(body.utf8()))
    }
}

import BlobStore
import Observability

/// Failures decided by the HTTP layer (the store's own failures are `StoreError`).
public enum HTTPError: Error, Equatable, Sendable {
    /// The request is well-formed HTTP but asks for something invalid; the detail says what.
    case badRequest(String)
    /// The request breaks HTTP/1.1 framing rules; the connection is closed after the answer.
    case malformedMessage(String)
    /// No such route.
    case noRoute
    /// The route exists but not for this method.
    case methodNotAllowed(allowed: [String])
    /// No token, or an unknown one: why (for the metrics), and the detail the client is told.
    case unauthorized(AuthRefusal, String)
    /// The credential's grants do not meet the requirement.
    case forbidden(AccessRequirement)
    /// The request body's media type is not the one this route takes.
    case unsupportedMediaType(String)
    /// A tus request without `Tus-Resumable: 1.0.0`.
    case tusVersionUnsupported
    /// The server cannot take requests right now; the detail says why.
    case unavailable(String)
    /// No requested range overlaps a blob of `size` bytes.
    case rangeNotSatisfiable(size: UInt64)
    /// The request uses an HTTP feature blobd does not implement (a transfer coding other than
    /// chunked); the connection is closed after the answer.
    case notImplemented(String)
    /// The body does not match a digest its head announced (Content-MD5); the detail says how.
    case digestMismatch(String)
    /// The request conflicts with what it names (a read-only credential); the detail says how.
    case conflict(String)
    /// A CORS preflight that no rule allows.
    case corsNotAllowed
    /// A bucket setting (CORS, lifecycle, ...) that is not set; the detail names it.
    case settingNotFound(String)
}

extension HTTPError {
    /// What a request still waiting for its answer when blobd stops is told, in every dialect.
    public static let shutdownNotice = "blobd is shutting down; the request may or may not have taken effect. Retry it."
}

extension HTTPError: ClassifiedFailure {
    public var failureClass: FailureClass {
        switch self {
        case .badRequest, .malformedMessage, .unsupportedMediaType, .digestMismatch: .badRequest
        case .noRoute, .settingNotFound: .notFound
        case .methodNotAllowed: .methodNotAllowed
        case .unauthorized: .unauthenticated
        case .forbidden: .forbidden
        case .tusVersionUnsupported: .preconditionFailed
        case .unavailable: .unavailable
        case .rangeNotSatisfiable: .rangeNotSatisfiable
        case .notImplemented: .notImplemented
        case .conflict: .conflict
        case .corsNotAllowed: .forbidden
        }
    }
}

extension AuthRefusal {
    /// The refusal an error of the store or the HTTP layer is, nil if it is none.
    public init?(_ error: any Error) {
        switch error {
        case HTTPError.unauthorized(let reason, _): self = reason
        case HTTPError.forbidden: self = .forbidden
        case StoreError.createOnly: self = .createOnly
        default: return nil
        }
    }
}

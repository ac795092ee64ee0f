/// What kind of failure an error is, whatever dialect answers it. Each dialect maps a class to
/// its status in one exhaustive switch (`Problem.status(of:)` for /v1, `S3Error.status(of:)` for
/// S3), and each domain error names its class in one exhaustive switch, so a new error case
/// cannot compile until someone decides what kind of failure it is.
public enum FailureClass: String, Sendable, CaseIterable {
    /// The request is wrong; sent again unchanged it fails again.
    case badRequest
    /// No credential, or one the server does not know or whose signature fails.
    case unauthenticated
    /// The credential is known but lacks the permission.
    case forbidden
    /// What the request names is not there.
    case notFound
    /// It was there, and expired.
    case gone
    /// The resource exists, not for this method.
    case methodNotAllowed
    /// The request conflicts with the resource's state (a bucket not empty, an upload's offset).
    case conflict
    /// Another request holds the resource; retry when it ends.
    case locked
    /// A precondition the client set does not hold.
    case preconditionFailed
    /// The body is larger than the limit.
    case tooLarge
    /// No requested range overlaps the representation.
    case rangeNotSatisfiable
    /// The client reached a quota.
    case tooManyRequests
    /// The server does not implement what the request asks.
    case notImplemented
    /// The server cannot answer right now; retry later.
    case unavailable
    /// The disk is full; nothing was changed.
    case insufficientStorage
    /// The server's own fault: the details go to the log, never to the client.
    case `internal`
}

/// An error that names its failure class.
public protocol ClassifiedFailure: Error {
    var failureClass: FailureClass { get }
}

extension FailureClass {
    /// The class of any error: an error that does not name one is the server's own fault.
    public static func of(_ error: any Error) -> FailureClass {
        (error as? any ClassifiedFailure)?.failureClass ?? .internal
    }
}

extension StoreError: ClassifiedFailure {
    public var failureClass: FailureClass {
        switch self {
        case .invalidKey, .digestMismatch, .keyNotContentDigest, .lengthConflict, .checksumMismatch, .invalidPart,
             .invalidPartOrder, .partTooSmall:
            .badRequest
        case .notFound, .uploadNotFound, .bucketNotFound, .keyNotFound, .shareNotFound: .notFound
        case .keyConflict: .conflict
        case .uploadExpired: .gone
        case .preconditionFailed: .preconditionFailed
        case .createOnly, .objectLocked: .forbidden
        case .tooLarge: .tooLarge
        case .offsetMismatch, .bucketNotEmpty: .conflict
        case .uploadBusy: .locked
        case .tooManyUploads: .tooManyRequests
        case .insufficientStorage: .insufficientStorage
        case .index(let failure): failure.failureClass
        case .dataDirectoryLocked, .dataDirectoryIsShared, .io, .uploadStateInvalid: .internal
        }
    }
}

extension IndexFailure: ClassifiedFailure {
    public var failureClass: FailureClass {
        switch self {
        case .full: .insufficientStorage
        case .busy, .unavailable: .unavailable
        case .corrupt, .failed: .internal
        }
    }
}

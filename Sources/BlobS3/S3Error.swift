import HTTPCore
import BlobStore
import MicroHTTPD
import Observability

/// An S3 error: its code, HTTP status and message, rendered as S3's XML `<Error>`. The one
/// place where store errors become S3 answers is `init(_ error:)`.
struct S3Error: Error, Equatable, ClassifiedFailure {
    enum Code: String {
        case accessDenied = "AccessDenied"
        /// A CORS preflight no rule allows.
        case accessForbidden = "AccessForbidden"
        case authorizationHeaderMalformed = "AuthorizationHeaderMalformed"
        case authorizationQueryParametersError = "AuthorizationQueryParametersError"
        case badDigest = "BadDigest"
        case bucketAlreadyOwnedByYou = "BucketAlreadyOwnedByYou"
        case bucketAlreadyExists = "BucketAlreadyExists"
        case bucketNotEmpty = "BucketNotEmpty"
        case entityTooLarge = "EntityTooLarge"
        case insufficientStorage = "InsufficientStorage"
        case internalError = "InternalError"
        case invalidAccessKeyId = "InvalidAccessKeyId"
        case invalidArgument = "InvalidArgument"
        case invalidBucketName = "InvalidBucketName"
        case invalidRange = "InvalidRange"
        case invalidPartNumber = "InvalidPartNumber"
        case invalidRequest = "InvalidRequest"
        case keyTooLong = "KeyTooLongError"
        case incompleteBody = "IncompleteBody"
        case invalidDigest = "InvalidDigest"
        case invalidLocationConstraint = "InvalidLocationConstraint"
        case invalidStorageClass = "InvalidStorageClass"
        case missingContentLength = "MissingContentLength"
        case malformedXML = "MalformedXML"
        case malformedPOSTRequest = "MalformedPOSTRequest"
        case malformedPolicy = "MalformedPolicy"
        case malformedACL = "MalformedACLError"
        case malformedTrailer = "MalformedTrailerError"
        case metadataTooLarge = "MetadataTooLarge"
        case methodNotAllowed = "MethodNotAllowed"
        case noSuchBucket = "NoSuchBucket"
        case noSuchKey = "NoSuchKey"
        case noSuchUpload = "NoSuchUpload"
        case noSuchVersion = "NoSuchVersion"
        case invalidPart = "InvalidPart"
        case invalidPartOrder = "InvalidPartOrder"
        case entityTooSmall = "EntityTooSmall"
        case operationAborted = "OperationAborted"
        case notImplemented = "NotImplemented"
        case preconditionFailed = "PreconditionFailed"
        /// Ceph RGW's code for a quota reached: here, the unfinished multipart uploads of a key.
        case quotaExceeded = "QuotaExceeded"
        case requestTimeTooSkewed = "RequestTimeTooSkewed"
        case serviceUnavailable = "ServiceUnavailable"
        case signatureDoesNotMatch = "SignatureDoesNotMatch"
        case contentSHA256Mismatch = "XAmzContentSHA256Mismatch"
        // A bucket or object configuration that blobd never has (GET of it).
        case noSuchBucketPolicy = "NoSuchBucketPolicy"
        case noSuchLifecycleConfiguration = "NoSuchLifecycleConfiguration"
        case noSuchCORSConfiguration = "NoSuchCORSConfiguration"
        case noSuchWebsiteConfiguration = "NoSuchWebsiteConfiguration"
        case noSuchTagSet = "NoSuchTagSet"
        case replicationConfigurationNotFound = "ReplicationConfigurationNotFoundError"
        case encryptionConfigurationNotFound = "ServerSideEncryptionConfigurationNotFoundError"
        case objectLockConfigurationNotFound = "ObjectLockConfigurationNotFoundError"
        // Object Lock.
        case noSuchObjectLockConfiguration = "NoSuchObjectLockConfiguration"
        case invalidBucketState = "InvalidBucketState"

        /// S3's status of the code: its failure class's (`S3Error.status(of:)`), but for
        /// MissingContentLength, S3's one 411.
        var status: Int {
            self == .missingContentLength ? 411 : S3Error.status(of: failureClass)
        }

        /// What kind of failure the code names.
        var failureClass: FailureClass {
            switch self {
            case .authorizationHeaderMalformed, .authorizationQueryParametersError, .badDigest, .invalidArgument,
                 .invalidBucketName, .invalidRequest, .keyTooLong, .incompleteBody, .invalidDigest, .invalidLocationConstraint, .invalidStorageClass,
                 .missingContentLength, .malformedXML, .malformedPOSTRequest, .malformedPolicy, .malformedACL, .malformedTrailer, .metadataTooLarge,
                 .invalidPart, .invalidPartOrder,
                 .entityTooSmall, .contentSHA256Mismatch:
                .badRequest
            case .invalidAccessKeyId, .requestTimeTooSkewed, .signatureDoesNotMatch: .unauthenticated
            case .accessDenied, .accessForbidden: .forbidden
            case .noSuchBucket, .noSuchKey, .noSuchUpload, .noSuchVersion, .noSuchBucketPolicy, .noSuchLifecycleConfiguration,
                 .noSuchCORSConfiguration, .noSuchWebsiteConfiguration, .noSuchTagSet, .replicationConfigurationNotFound,
                 .encryptionConfigurationNotFound, .objectLockConfigurationNotFound, .noSuchObjectLockConfiguration:
                .notFound
            case .methodNotAllowed: .methodNotAllowed
            case .bucketAlreadyOwnedByYou, .bucketAlreadyExists, .bucketNotEmpty, .invalidBucketState: .conflict
            case .operationAborted: .locked
            case .preconditionFailed: .preconditionFailed
            case .entityTooLarge: .tooLarge
            case .invalidRange, .invalidPartNumber: .rangeNotSatisfiable
            case .quotaExceeded: .tooManyRequests
            case .notImplemented: .notImplemented
            case .serviceUnavailable: .unavailable
            case .insufficientStorage: .insufficientStorage
            case .internalError: .internal
            }
        }
    }

    /// S3's status of each failure class. S3 has no 401, 410, 423 or 429: an unknown key is
    /// 403, an expired upload is a 404, a busy one a 409, a quota (Ceph's QuotaExceeded) a 403;
    /// and EntityTooLarge is a 400.
    static func status(of failure: FailureClass) -> Int {
        switch failure {
        case .badRequest, .tooLarge: 400
        case .unauthenticated, .forbidden, .tooManyRequests: 403
        case .notFound, .gone: 404
        case .methodNotAllowed: 405
        case .conflict, .locked: 409
        case .preconditionFailed: 412
        case .rangeNotSatisfiable: 416
        case .internal: 500
        case .notImplemented: 501
        case .unavailable: 503
        case .insufficientStorage: 507
        }
    }

    let code: Code
    let message: String
    var bucket: String?
    var key: String?
    var headers: [(name: String, value: String)] = []
    /// Why the credential or its grants were refused, where the code alone does not say.
    private var reason: AuthRefusal?

    var failureClass: FailureClass { code.failureClass }

    /// `refusal`: why an AccessDenied refuses, where that is not that the grants fall short.
    init(_ code: Code, _ message: String, refusal: AuthRefusal? = nil) {
        self.code = code
        self.message = message
        self.reason = refusal
    }

    /// Why the request was refused for its credential or its grants, as
    /// `blobd_auth_refusals_total` counts it; nil for any other failure (a quota is a 403 too).
    var refusal: AuthRefusal? {
        if let reason { return reason }
        switch code {
        case .invalidAccessKeyId: return .unknownCredential
        case .signatureDoesNotMatch: return .badSignature
        case .requestTimeTooSkewed: return .expired
        case .accessDenied: return .forbidden
        default: return nil
        }
    }

    static func == (lhs: S3Error, rhs: S3Error) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message && lhs.bucket == rhs.bucket && lhs.key == rhs.key
    }

    /// The error → S3 answer map for everything the store and the HTTP layer throw; the status
    /// is the code's (`Code.status`).
    init(_ error: any Error) {
        if let error = error as? S3Error {
            self = error
        } else if let error = error as? StoreError {
            self.init(error)
        } else if let error = error as? HTTPError {
            self.init(error)
        } else {
            self.init(.internalError, "We encountered an internal error. Please try again.")
        }
    }

    /// The S3 answer to a store failure.
    init(_ error: StoreError) {
        switch error {
        case .invalidKey(let reason): self.init(.invalidArgument, "Invalid object key: \(reason).")
        case .notFound: self.init(.noSuchKey, "The specified key does not exist.")
        case .preconditionFailed: self.init(.preconditionFailed, "At least one of the pre-conditions you specified did not hold.")
        case .createOnly:
            self.init(.accessDenied, "An object exists at this key, and the access key may only create (grant 'create').",
                      refusal: .createOnly)
        case .tooLarge(let limit): self.init(.entityTooLarge, "Your proposed upload exceeds the maximum allowed size of \(limit) bytes.")
        case .digestMismatch: self.init(.contentSHA256Mismatch, "The provided 'x-amz-content-sha256' header does not match what was computed.")
        case .insufficientStorage, .index(.full): self.init(.insufficientStorage, "The data directory does not have enough free space; nothing was changed.")
        case .bucketNotFound: self.init(.noSuchBucket, "The specified bucket does not exist.")
        case .uploadNotFound: self.init(.noSuchUpload, "The specified upload does not exist.")
        case .invalidPart(let number):
            self.init(.invalidPart, "One or more of the specified parts could not be found or its ETag did not match (part \(number)).")
        case .invalidPartOrder: self.init(.invalidPartOrder, "The list of parts was not in ascending order.")
        case .uploadBusy: self.init(.operationAborted, "A conflicting operation is in progress on this upload; retry it.")
        case .keyNotContentDigest: self.init(.badDigest, "A key of 64 hex digits may only hold the bytes whose SHA-256 it is.")
        case .checksumMismatch: self.init(.badDigest, "The checksum you specified did not match the calculated checksum.")
        case .partTooSmall: self.init(.entityTooSmall, "Your proposed upload is smaller than the minimum allowed object size.")
        case .bucketNotEmpty: self.init(.bucketNotEmpty, "The bucket you tried to delete is not empty.")
        case .tooManyUploads(let limit):
            self.init(.quotaExceeded, "This access key (or, without keys, this client address) has \(limit) unfinished "
                      + "multipart uploads, the most blobd allows (--max-open-uploads); complete or abort some first.")
        // Keys and share links are /v1's; S3 never looks one up by id.
        case .keyNotFound, .shareNotFound: self.init(.noSuchKey, "The specified key does not exist.")
        case .keyConflict(let detail): self.init(.invalidRequest, "A key with this \(detail) exists already.")
        case .objectLocked: self.init(.accessDenied, "Access Denied because object protected by object lock.")
        case .index(.busy), .index(.unavailable):
            self.init(.serviceUnavailable, "The index is busy or unreachable; retry the request.")
            headers = [("Retry-After", "1")]
        case .uploadExpired: self.init(.noSuchUpload, "The specified upload does not exist; it expired.")
        case .offsetMismatch, .lengthConflict:
            self.init(.invalidRequest, "The request conflicts with the upload's offset or length.")
        // The server's own faults: named in the log, never to the client.
        case .dataDirectoryLocked, .dataDirectoryIsShared, .io, .index(.corrupt), .index(.failed), .uploadStateInvalid:
            self.init(.internalError, "We encountered an internal error. Please try again.")
        }
    }

    /// The S3 answer to a failure the HTTP layer decided.
    init(_ error: HTTPError) {
        switch error {
        case .malformedMessage(let detail):
            self.init(.invalidRequest, detail)
            headers = [("Connection", "close")]
        case .notImplemented(let detail):
            self.init(.notImplemented, detail)
            headers = [("Connection", "close")]
        case .unavailable(let detail):
            self.init(.serviceUnavailable, detail)
            headers = [("Retry-After", "1")]
        case .conflict(let detail):
            self.init(.invalidRequest, detail)
        case .badRequest(let detail):
            self.init(.invalidArgument, detail)
        case .noRoute, .methodNotAllowed:
            self.init(.methodNotAllowed, "The specified method is not allowed against this resource.")
        case .unauthorized(let reason, let detail):
            self.init(.accessDenied, detail, refusal: reason)
        case .forbidden(let requirement):
            self.init(.accessDenied, "Access Denied: the access key's grants do not allow \(requirement).")
        case .unsupportedMediaType(let detail):
            self.init(.invalidRequest, detail)
        case .tusVersionUnsupported:
            self.init(.invalidRequest, "Tus-Resumable names a version blobd does not speak.")
        case .rangeNotSatisfiable:
            self.init(.invalidRange, "The requested range is not satisfiable")
        case .digestMismatch(let detail):
            self.init(.badDigest, detail)
        case .corsNotAllowed:
            self.init(.accessForbidden, "CORSResponse: This CORS request is not allowed. This is usually because the evalution of "
                      + "Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not "
                      + "whitelisted by the resource's CORS spec.")
        case .settingNotFound(let detail):
            // Not thrown by an S3 operation (each answers its own NoSuch…Configuration).
            self.init(.invalidRequest, detail)
        }
    }

    /// The XML answer (without a body for HEAD).
    func response(requestID: String, head: Bool) -> HTTPResponse {
        var xml = XML.declaration + "<Error><Code>\(code.rawValue)</Code><Message>\(XML.escape(message))</Message>"
        if let bucket { xml += "<BucketName>\(XML.escape(bucket))</BucketName>" }
        if let key { xml += "<Key>\(XML.escape(key))</Key>" }
        xml += "<RequestId>\(requestID)</RequestId></Error>"
        return HTTPResponse(status: code.status,
                            headers: [("Content-Type", "application/xml"), ("x-amz-request-id", requestID)] + headers,
                            body: head ? .empty : .bytes(Array(xml.utf8)))
    }
}

/// The little XML S3 answers need.
enum XML {
    static let declaration = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    static let namespace = "http://s3.amazonaws.com/doc/2006-03-01/"

    /// Text escaped for element content. A carriage return becomes a reference (a parser would
    /// turn a raw one into a line feed), and the control characters XML 1.0 cannot carry at all,
    /// not even as references, become U+FFFD (keys never hold them; error messages might).
    static func escape(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out.append(contentsOf: "&amp;".unicodeScalars)
            case "<": out.append(contentsOf: "&lt;".unicodeScalars)
            case ">": out.append(contentsOf: "&gt;".unicodeScalars)
            case "\"": out.append(contentsOf: "&quot;".unicodeScalars)
            case "'": out.append(contentsOf: "&apos;".unicodeScalars)
            case "\r": out.append(contentsOf: "&#13;".unicodeScalars)
            case "\t", "\n": out.append(scalar)
            case _ where scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF: out.append("\u{FFFD}")
            default: out.append(scalar)
            }
        }
        return String(out)
    }

    /// `<name>text</name>`.
    static func element(_ name: String, _ text: String) -> String {
        "<\(name)>\(escape(text))</\(name)>"
    }
}

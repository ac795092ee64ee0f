import HTTPCore
import BlobStore
import Testing
@testable import BlobS3
import Observability

/// The S3 error map is one exhaustive switch: a client's fault is never an InternalError, and
/// the server's own faults never show their detail.
@Suite struct S3ErrorMapTests {
    @Test func clientFaultsKeepTheirKind() {
        let cases: [(any Error, S3Error.Code)] = [
            (StoreError.uploadExpired, .noSuchUpload),
            (StoreError.offsetMismatch(current: 3), .invalidRequest),
            (StoreError.lengthConflict, .invalidRequest),
            (StoreError.tooManyUploads(limit: 2), .quotaExceeded),
            (StoreError.keyNotContentDigest(actual: []), .badDigest),
            (HTTPError.rangeNotSatisfiable(size: 1), .invalidRange),
            (HTTPError.forbidden(.someGrant), .accessDenied),
            (HTTPError.unauthorized(.noCredential, "no"), .accessDenied),
            (HTTPError.methodNotAllowed(allowed: ["GET"]), .methodNotAllowed),
            (HTTPError.digestMismatch("differs"), .badDigest),
        ]
        for (error, code) in cases {
            #expect(S3Error(error).code == code, "\(error)")
        }
    }

    /// Each 403 that refuses a credential or its grants names its reason for
    /// `blobd_auth_refusals_total`; a quota's 403 and every other failure name none.
    @Test func refusalsNameTheirReason() {
        let cases: [(S3Error, AuthRefusal?)] = [
            (S3Error(StoreError.createOnly), .createOnly),
            (S3Error(HTTPError.forbidden(.someGrant)), .forbidden),
            (S3Error(HTTPError.unauthorized(.expired, "gone")), .expired),
            (S3Error(.invalidAccessKeyId, "unknown"), .unknownCredential),
            (S3Error(.signatureDoesNotMatch, "differs"), .badSignature),
            (S3Error(.requestTimeTooSkewed, "skewed"), .expired),
            (S3Error(.accessDenied, "grants"), .forbidden),
            (S3Error(.accessDenied, "Request has expired", refusal: .expired), .expired),
            (S3Error(StoreError.tooManyUploads(limit: 2)), nil),
            (S3Error(StoreError.notFound), nil),
            (S3Error(.authorizationHeaderMalformed, "malformed"), nil),
        ]
        for (error, reason) in cases {
            #expect(error.refusal == reason, "\(error.code) \(error.message)")
        }
        #expect(S3Error(StoreError.tooManyUploads(limit: 2)).code.status == 403, "a quota is a 403 that is no refusal")
        #expect(AuthRefusal(StoreError.createOnly) == .createOnly)
        #expect(AuthRefusal(HTTPError.unauthorized(.noCredential, "no")) == .noCredential)
        #expect(AuthRefusal(HTTPError.forbidden(.someGrant)) == .forbidden)
        #expect(AuthRefusal(StoreError.notFound) == nil)
    }

    @Test func serverFaultsAreOpaque() {
        for error in [StoreError.io(operation: "fsync /secret/path", errno: 5), .index(.corrupt("table t")),
                      .dataDirectoryLocked(path: "/secret/path")] {
            let mapped = S3Error(error)
            #expect(mapped.code == .internalError)
            #expect(!mapped.message.contains("secret"))
        }
    }
}

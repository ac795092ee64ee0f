import HTTPCore
import BlobStore
import Testing
@testable import BlobS3

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
            (HTTPError.unauthorized("no"), .accessDenied),
            (HTTPError.methodNotAllowed(allowed: ["GET"]), .methodNotAllowed),
            (HTTPError.digestMismatch("differs"), .badDigest),
        ]
        for (error, code) in cases {
            #expect(S3Error(error).code == code, "\(error)")
        }
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

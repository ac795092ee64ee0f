import BlobAPIv1
import BlobStore
import HTTPCore
import Testing
@testable import BlobS3

/// Every store error answers with a status in each dialect. Where the contract lets both
/// dialects use the same status they do; where they differ, the row says why.
@Suite struct FailureMapTests {
    /// One value of each StoreError case, with its /v1 and S3 statuses. The switch has no
    /// default: a new case does not compile until it has a row.
    static func row(_ error: StoreError) -> (v1: Int, s3: Int) {
        switch error {
        case .invalidKey, .digestMismatch, .keyNotContentDigest, .lengthConflict, .invalidPart, .invalidPartOrder,
             .partTooSmall:
            (400, 400)
        case .notFound, .uploadNotFound, .bucketNotFound, .keyNotFound, .shareNotFound: (404, 404)
        // S3 has no key admin: a taken key is an InvalidRequest there.
        case .keyConflict: (409, 400)
        case .preconditionFailed: (412, 412)
        case .createOnly: (403, 403)
        // Object Lock: S3's AccessDenied.
        case .objectLocked: (403, 403)
        case .bucketNotEmpty: (409, 409)
        case .insufficientStorage: (507, 507)
        case .dataDirectoryLocked, .dataDirectoryIsShared, .io, .uploadStateInvalid: (500, 500)
        case .index(.full): (507, 507)
        case .index(.busy), .index(.unavailable): (503, 503)
        case .index(.corrupt), .index(.failed): (500, 500)
        // S3's EntityTooLarge is a 400.
        case .tooLarge: (413, 400)
        // S3 has no 410: an expired upload is NoSuchUpload.
        case .uploadExpired: (410, 404)
        // tus answers a wrong offset 409; S3 has no offsets (InvalidRequest).
        case .offsetMismatch: (409, 400)
        // tus: 423 Locked; S3: OperationAborted (409).
        case .uploadBusy: (423, 409)
        // tus's checksum extension names 460; S3: BadDigest.
        case .checksumMismatch: (460, 400)
        // S3 has no 429: Ceph's QuotaExceeded is a 403.
        case .tooManyUploads: (429, 403)
        }
    }

    static let allStoreErrors: [StoreError] = [
        .invalidKey("x"), .notFound, .preconditionFailed, .createOnly, .tooLarge(limit: 1), .digestMismatch(expected: [], actual: []),
        .keyNotContentDigest(actual: []), .insufficientStorage, .uploadNotFound, .uploadExpired, .offsetMismatch(current: 1),
        .uploadBusy, .lengthConflict, .checksumMismatch, .dataDirectoryLocked(path: "/p"), .dataDirectoryIsShared(path: "/p"),
        .io(operation: "fsync", errno: 5), .index(.full), .index(.busy), .index(.unavailable("u")), .index(.corrupt("c")),
        .index(.failed("f")), .bucketNotFound, .bucketNotEmpty, .invalidPart(number: 2), .invalidPartOrder,
        .partTooSmall(number: 1), .uploadStateInvalid(id: "i", reason: "r"), .tooManyUploads(limit: 2),
        .keyNotFound, .keyConflict("token"), .shareNotFound, .objectLocked,
    ]

    @Test(arguments: allStoreErrors) func storeErrorStatuses(_ error: StoreError) {
        let expected = Self.row(error)
        #expect(Problem(error).status == expected.v1)
        #expect(S3Error(error).code.status == expected.s3)
        #expect(S3Error(error as any Error).code.status == expected.s3)
        #expect(Problem(error as any Error).status == expected.v1)
    }

    /// A store error and the S3 code it becomes are the same kind of failure, but where S3 has
    /// no such kind (gone, locked, a quota, a key conflict) or calls an upload's offset a bad request.
    @Test(arguments: allStoreErrors) func s3CodeKeepsTheClass(_ error: StoreError) {
        let mapped = S3Error(error).code.failureClass
        switch error {
        case .uploadExpired: #expect(mapped == .notFound)
        case .offsetMismatch: #expect(mapped == .badRequest)
        // S3 has no keys of blobd's own to conflict; it never meets one.
        case .keyConflict: #expect(mapped == .badRequest)
        default: #expect(mapped == error.failureClass)
        }
    }

    /// Both dialects give the classes they share the same status.
    @Test(arguments: FailureClass.allCases) func sharedClassesShareStatuses(_ failure: FailureClass) {
        let v1 = Problem.status(of: failure)
        let s3 = S3Error.status(of: failure)
        switch failure {
        case .unauthenticated: #expect((v1, s3) == (401, 403))
        case .gone: #expect((v1, s3) == (410, 404))
        case .locked: #expect((v1, s3) == (423, 409))
        case .tooLarge: #expect((v1, s3) == (413, 400))
        case .tooManyRequests: #expect((v1, s3) == (429, 403))
        default: #expect(v1 == s3, "\(failure)")
        }
    }

    /// An error of a type no map knows is the server's fault, with nothing of it shown.
    @Test func unknownErrorsAreInternal() {
        struct Unknown: Error {}
        #expect(FailureClass.of(Unknown()) == .internal)
        #expect(Problem(Unknown()).status == 500)
        #expect(S3Error(Unknown()).code == .internalError)
    }
}

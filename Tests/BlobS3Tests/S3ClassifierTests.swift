import BlobCore
import HTTPCore
import Testing
@testable import BlobS3

/// Every operation the S3 dialect answers, and every one it refuses, from one classifier:
/// one row each, including the rows whose parameters would match more than one case.
@Suite struct S3ClassifierTests {
    struct Row: Sendable, CustomStringConvertible {
        let method: String
        let target: String
        let query: [String]
        let copySource: Bool
        let operation: S3Operation

        init(_ method: String, _ target: String, _ operation: S3Operation) {
            self.init(method, target, [], copySource: false, operation)
        }

        init(_ method: String, _ target: String, _ query: [String], _ operation: S3Operation) {
            self.init(method, target, query, copySource: false, operation)
        }

        init(_ method: String, _ target: String, _ query: [String] = [], copySource: Bool, _ operation: S3Operation) {
            self.method = method
            self.target = target
            self.query = query
            self.copySource = copySource
            self.operation = operation
        }

        var description: String { "\(method) \(target)?\(query.joined(separator: "&"))\(copySource ? " +copy" : "") → \(operation)" }

        var shape: S3Service.Target {
            switch target {
            case "/": .service
            case "/b": .bucket("b")
            default: .object(bucket: "b", key: "k")
            }
        }
    }

    static let rows: [Row] = [
        Row("GET", "/", .listBuckets),
        Row("HEAD", "/", .listBuckets),
        Row("PUT", "/", .methodNotAllowed),
        Row("DELETE", "/", .methodNotAllowed),
        Row("GET", "/", ["tagging"], .unsupportedSubresource),
        // Buckets.
        Row("PUT", "/b", .createBucket),
        Row("PUT", "/b", ["acl"], .putBucketACL),
        Row("PUT", "/b", ["versioning"], .putBucketVersioning),
        Row("PUT", "/b", ["policy"], .putBucketPolicy),
        Row("GET", "/b", ["policy"], .getBucketPolicy),
        Row("DELETE", "/b", ["policy"], .deleteBucketPolicy),
        Row("GET", "/b", ["policyStatus"], .getBucketPolicyStatus),
        Row("POST", "/b", ["policy"], .methodNotAllowed),
        Row("PUT", "/b", ["policyStatus"], .methodNotAllowed),
        Row("GET", "/b", ["policy", "tagging"], .getBucketConfiguration),
        Row("PUT", "/b", ["lifecycle"], .putBucketLifecycle),
        Row("GET", "/b", ["lifecycle"], .getBucketLifecycle),
        Row("DELETE", "/b", ["lifecycle"], .deleteBucketLifecycle),
        Row("POST", "/b", ["lifecycle"], .unsupportedSubresource),
        Row("GET", "/b", ["lifecycle", "tagging"], .getBucketConfiguration),
        Row("PUT", "/b/k", ["lifecycle"], .unsupportedSubresource),
        Row("PUT", "/b", ["notification"], .putBucketNotification),
        Row("GET", "/b", ["notification"], .getBucketNotification),
        Row("DELETE", "/b", ["notification"], .methodNotAllowed),
        Row("PUT", "/b/k", ["notification"], .unsupportedSubresource),
        Row("HEAD", "/b", .headBucket),
        Row("DELETE", "/b", .deleteBucket),
        Row("DELETE", "/b", ["cors"], .deleteBucketCORS),
        Row("PUT", "/b", ["cors"], .putBucketCORS),
        Row("GET", "/b", ["cors"], .getBucketCORS),
        Row("POST", "/b", ["cors"], .methodNotAllowed),
        Row("GET", "/b/k", ["cors"], .unsupportedSubresource),
        Row("GET", "/b", .listObjects),
        Row("GET", "/b", ["list-type", "prefix"], .listObjects),
        Row("GET", "/b", ["versions"], .listObjects),
        Row("GET", "/b", ["uploads"], .listMultipartUploads),
        Row("GET", "/b", ["uploads", "location"], .listMultipartUploads),
        Row("GET", "/b", ["location"], .getBucketLocation),
        Row("GET", "/b", ["versioning"], .getBucketVersioning),
        Row("GET", "/b", ["acl"], .getBucketACL),
        Row("GET", "/b", ["torrent"], .getBucketConfiguration),
        Row("GET", "/b", ["acl", "tagging"], .getBucketConfiguration),
        Row("POST", "/b", ["delete"], .deleteObjects),
        Row("POST", "/b", ["delete", "tagging"], .unsupportedDeleteObjects),
        Row("POST", "/b", ["lifecycle", "delete"], .unsupportedDeleteObjects),
        Row("POST", "/b", ["tagging"], .unsupportedSubresource),
        Row("POST", "/b", .postObject),
        Row("PATCH", "/b", .methodNotAllowed),
        // Objects.
        Row("PUT", "/b/k", .putObject),
        Row("PUT", "/b/k", copySource: true, .copyObject),
        Row("PUT", "/b/k", ["acl"], copySource: true, .copyObject),
        Row("PUT", "/b/k", ["acl"], .putObjectACL),
        Row("PUT", "/b/k", ["tagging"], .unsupportedSubresource),
        Row("PUT", "/b/k", ["policy"], .unsupportedSubresource),
        Row("GET", "/b/k", ["policy"], .unsupportedSubresource),
        Row("GET", "/", ["policy"], .unsupportedSubresource),
        Row("PUT", "/b/k", ["tagging"], copySource: true, .unsupportedSubresource),
        Row("GET", "/b/k", .getObject),
        Row("HEAD", "/b/k", .getObject),
        Row("GET", "/b/k", ["versionId"], .getObject),
        Row("GET", "/b/k", ["partNumber"], .getObject),
        Row("GET", "/b/k", ["acl"], .getObjectACL),
        Row("HEAD", "/b/k", ["acl"], .getObjectACL),
        Row("GET", "/b/k", ["attributes"], .getObjectAttributes),
        Row("GET", "/b/k", ["tagging"], .getObjectConfiguration),
        Row("GET", "/b/k", ["retention"], .getObjectRetention),
        Row("PUT", "/b/k", ["retention", "versionId"], .putObjectRetention),
        Row("GET", "/b/k", ["legal-hold"], .getObjectLegalHold),
        Row("PUT", "/b/k", ["legal-hold"], .putObjectLegalHold),
        Row("GET", "/b", ["object-lock"], .getObjectLockConfiguration),
        Row("PUT", "/b", ["object-lock"], .putObjectLockConfiguration),
        Row("DELETE", "/b", ["object-lock"], .unsupportedSubresource),
        Row("PUT", "/b/k", ["object-lock"], .unsupportedSubresource),
        Row("GET", "/b/k", ["torrent"], .unsupportedSubresource),
        Row("HEAD", "/b/k", ["tagging"], .unsupportedSubresource),
        Row("DELETE", "/b/k", .deleteObject),
        Row("POST", "/b/k", ["uploads"], .createMultipartUpload),
        Row("POST", "/b/k", ["uploads", "uploadId"], .createMultipartUpload),
        Row("POST", "/b/k", ["uploadId"], .completeMultipartUpload),
        Row("PUT", "/b/k", ["partNumber", "uploadId"], .uploadPart),
        Row("PUT", "/b/k", ["partNumber", "uploadId"], copySource: true, .uploadPart),
        Row("GET", "/b/k", ["uploadId"], .listParts),
        Row("GET", "/b/k", ["uploadId", "attributes"], .listParts),
        Row("DELETE", "/b/k", ["uploadId"], .abortMultipartUpload),
        Row("DELETE", "/b/k", ["uploadId", "tagging"], .unsupportedSubresource),
        Row("POST", "/b/k", ["uploads", "tagging"], .unsupportedSubresource),
        Row("POST", "/b/k", .methodNotAllowed),
        Row("POST", "/b/k", ["delete"], .methodNotAllowed),
        Row("OPTIONS", "/b/k", .methodNotAllowed),
    ]

    @Test(arguments: rows) func classifies(_ row: Row) {
        #expect(S3Operation.classify(method: row.method, target: row.shape, parameters: row.query,
                                     copySource: row.copySource) == row.operation)
    }

    /// The table names every operation at least once.
    @Test func everyOperationHasARow() {
        let named = Set(Self.rows.map(\.operation))
        #expect(named == Set(S3Operation.allCases))
    }

    /// What each operation needs of the caller's grants: reads read the key, deletes delete it,
    /// uploads (and aborting or listing their parts) write it; bucket operations need a grant in
    /// the bucket, or over all of it to delete or configure it; listings read every key under
    /// their prefix. CreateBucket decides itself (BucketAlreadyExists or AccessDenied), and so
    /// does POST Object (its form names the key, and its policy's signature the caller).
    @Test(arguments: rows) func requirements(_ row: Row) {
        let key = Array("b/k".utf8)
        let action: Grant.Action = row.method == "GET" || row.method == "HEAD" ? .read : row.method == "DELETE" ? .delete : .write
        let expected: AccessRequirement = switch row.operation {
        case .listBuckets: .someGrant
        // DeleteObjects decides per key, whatever the caller holds on the bucket (issue 35).
        case .createBucket, .postObject, .deleteObjects, .unsupportedDeleteObjects: .nothing
        case .deleteBucket: .wholeBucket(.delete, "b")
        case .listObjects, .listMultipartUploads: .listing(Array("b/p".utf8))
        case .headBucket, .getBucketLocation, .getBucketVersioning, .getBucketACL, .getBucketConfiguration, .getBucketPolicy, .getBucketPolicyStatus, .getBucketCORS, .getBucketLifecycle,
             .getObjectLockConfiguration:
            .bucket("b")
        case .putBucketACL, .putBucketVersioning, .putBucketPolicy, .deleteBucketPolicy, .putBucketCORS, .deleteBucketCORS,
             .putBucketLifecycle, .deleteBucketLifecycle, .putBucketNotification, .getBucketNotification, .putObjectLockConfiguration:
            .wholeBucket(.admin, "b")
        // Locking a version (retention, legal hold) needs admin on it, as its ACL does.
        case .putObjectACL, .putObjectRetention, .putObjectLegalHold: .key(.admin, key)
        case .abortMultipartUpload, .listParts: .key(.write, key)
        case .unsupportedSubresource, .methodNotAllowed:
            switch row.shape {
            case .service: .someGrant
            case .bucket: .wholeBucket(action, "b")
            case .object: .key(action, key)
            }
        default: .key(action, key)
        }
        #expect(row.operation.requirement(method: row.method, target: row.shape, prefix: Array("p".utf8)) == expected)
    }

    /// Only the operations that set an ACL read `x-amz-acl` themselves.
    @Test func aclSettersReadTheirHeader() {
        #expect(Set(S3Operation.allCases.filter(\.setsACL)) == [.createBucket, .putBucketACL, .putObjectACL])
    }

    /// Only the subresource answers skip the version and ACL checks.
    @Test func subresourcesSkipTheWriteChecks() {
        let skipping = S3Operation.allCases.filter { !$0.checksVersionAndACLs }
        #expect(Set(skipping) == [.getBucketConfiguration, .getObjectConfiguration, .unsupportedSubresource,
                                  .unsupportedDeleteObjects])
    }

    /// Single grants of every action on patterns inside, around and outside `b/k`.
    static let sampleGrants: [Grants] = Grant.Action.allCases.flatMap { action in
        ["*", "b", "b/k", "b/k*", "b/p*", "other"].map { pattern in (try? Grants(parsing: "\(action.rawValue):\(pattern)")) ?? .none }
    }

    /// An unsupported subresource added to any request never needs less of the caller's grants:
    /// every method, target, copy source and combination of the parameters that select an
    /// operation, with each unsupported subresource, is refused to every sample grant that the
    /// request without it is refused to. (A configuration GET, which S3 answers as "none" and
    /// which shows no object's bytes, needs what its bucket or key needs to be read.)
    @Test func unsupportedSubresourcesNeverNeedLess() {
        let selecting = ["uploads", "uploadId", "delete", "acl", "versioning", "location", "attributes", "partNumber"]
        let targets: [S3Service.Target] = [.service, .bucket("b"), .object(bucket: "b", key: "k")]
        var checked = 0
        for method in ["GET", "HEAD", "PUT", "POST", "DELETE", "PATCH"] {
            for target in targets {
                for mask in 0..<(1 << selecting.count) {
                    let base = selecting.indices.filter { mask & (1 << $0) != 0 }.map { selecting[$0] }
                    for copySource in [false, true] {
                        let plain = S3Operation.classify(method: method, target: target, parameters: base, copySource: copySource)
                        for extra in S3Operation.unsupportedSubresources {
                            let with = S3Operation.classify(method: method, target: target, parameters: base + [extra],
                                                            copySource: copySource)
                            let needs = S3Operation.requirement(of: with, method: method, target: target, parameters: base + [extra],
                                                                copySource: copySource)
                            let plainNeeds = S3Operation.requirement(of: plain, method: method, target: target, parameters: base,
                                                                     copySource: copySource)
                            let weaker = Self.sampleGrants.first { $0.permits(needs) && !$0.permits(plainNeeds) }
                            if with != .getBucketConfiguration && with != .getObjectConfiguration, let weaker {
                                Issue.record("\(method) \(target) \(base + [extra]): \(with) lets \(weaker) do what \(plain) does not")
                            }
                            checked += 1
                        }
                    }
                }
            }
        }
        #expect(checked == 6 * 3 * 256 * 2 * S3Operation.unsupportedSubresources.count)
    }
}

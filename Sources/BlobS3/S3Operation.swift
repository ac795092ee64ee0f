import BlobCore
import HTTPCore
import MicroHTTPD

/// The one S3 operation a request asks for, from its method, the shape of its target (service,
/// bucket, object), the names of its query parameters and whether it names a copy source.
/// `classify` is the only place that decides; `S3Service.perform` switches over the result.
enum S3Operation: String, Sendable, CaseIterable {
    // The service.
    case listBuckets
    // A bucket.
    case createBucket, headBucket, deleteBucket, listObjects, listMultipartUploads, getBucketLocation,
         getBucketVersioning, getBucketACL, deleteObjects
    // A bucket's canned ACL and policy (anonymous and authenticated grants).
    case putBucketACL, putBucketPolicy, getBucketPolicy, deleteBucketPolicy, getBucketPolicyStatus
    // A bucket's CORS rules.
    case putBucketCORS, getBucketCORS, deleteBucketCORS
    /// POST Object: a browser form upload with a signed policy.
    case postObject
    // A bucket's lifecycle rules.
    case putBucketLifecycle, getBucketLifecycle, deleteBucketLifecycle
    // A bucket's event subscriptions.
    case putBucketNotification, getBucketNotification
    /// GET of a bucket configuration blobd never has (policy, lifecycle, ...): answered as S3
    /// answers for a bucket without one.
    case getBucketConfiguration
    // An object.
    case putObject, copyObject, getObject, deleteObject, getObjectACL, putObjectACL, getObjectAttributes,
         createMultipartUpload, uploadPart, completeMultipartUpload, abortMultipartUpload, listParts
    /// GET of an object's tagging, which blobd never has.
    case getObjectConfiguration
    // Object Lock: a bucket's configuration, a version's retention and legal hold.
    case putObjectLockConfiguration, getObjectLockConfiguration, putObjectRetention, getObjectRetention,
         putObjectLegalHold, getObjectLegalHold
    // Refused: 501 NotImplemented.
    case putBucketVersioning, unsupportedSubresource
    /// DeleteObjects (`POST /BUCKET?delete`) with an unsupported subresource as well: refused
    /// like any unsupported subresource, but only to a caller with the delete scope DeleteObjects
    /// needs, so that adding a parameter never lowers the scope a request is checked against.
    case unsupportedDeleteObjects
    // Refused: 405 MethodNotAllowed.
    case methodNotAllowed

    /// The query parameters that select a subresource blobd does not support (but see the
    /// configuration GETs).
    static let unsupportedSubresources: Set<String> = [
        "tagging", "website", "replication", "encryption", "logging", "torrent",
        "accelerate", "requestPayment", "ownershipControls", "publicAccessBlock", "analytics", "inventory", "metrics",
        "intelligent-tiering", "restore", "select",
    ]

    /// The subresources of a bucket's policy: operations on a bucket, unsupported elsewhere.
    static let policySubresources: Set<String> = ["policy", "policyStatus"]

    /// The object subresources a GET answers as S3 does for an object without them.
    static let objectConfigurations: Set<String> = ["tagging"]

    /// The operation of a request. `parameters`: the names of its query parameters;
    /// `copySource`: it has an `x-amz-copy-source` header.
    static func classify(method: String, target: S3Service.Target, parameters: [String], copySource: Bool) -> S3Operation {
        // A handful of parameters at most: a scan beats building a set on every request.
        func has(_ name: String) -> Bool { parameters.contains(name) }
        if let unsupported = parameters.first(where: unsupportedSubresources.contains) {
            switch (method, target) {
            case ("GET", .bucket): return .getBucketConfiguration
            case ("GET", .object) where objectConfigurations.contains(unsupported): return .getObjectConfiguration
            case ("POST", .bucket) where has("delete"): return .unsupportedDeleteObjects
            default: return .unsupportedSubresource
            }
        }
        if let lock = objectLock(method, target, has) { return lock }
        if has("cors") {
            guard case .bucket = target else { return .unsupportedSubresource }
            switch method {
            case "GET": return .getBucketCORS
            case "PUT": return .putBucketCORS
            case "DELETE": return .deleteBucketCORS
            default: return .methodNotAllowed
            }
        }
        if has("lifecycle") {
            switch (method, target) {
            case ("GET", .bucket): return .getBucketLifecycle
            case ("PUT", .bucket): return .putBucketLifecycle
            case ("DELETE", .bucket): return .deleteBucketLifecycle
            case ("POST", .bucket) where has("delete"): return .unsupportedDeleteObjects
            default: return .unsupportedSubresource
            }
        }
        if has("notification") {
            guard case .bucket = target else { return .unsupportedSubresource }
            switch method {
            case "GET": return .getBucketNotification
            case "PUT": return .putBucketNotification
            default: return .methodNotAllowed
            }
        }
        if parameters.contains(where: policySubresources.contains) {
            guard case .bucket = target else { return has("policy") ? .unsupportedSubresource : plain(method, target, has, copySource) }
            return policy(method, has)
        }
        return plain(method, target, has, copySource)
    }

    /// Object Lock's operations (`?object-lock` on a bucket, `?retention` and `?legal-hold` on an
    /// object); nil when the request names none of them.
    private static func objectLock(_ method: String, _ target: S3Service.Target, _ has: (String) -> Bool) -> S3Operation? {
        let names = ["object-lock", "retention", "legal-hold"]
        guard let name = names.first(where: has) else { return nil }
        switch (name, method, target) {
        case ("object-lock", "GET", .bucket): return .getObjectLockConfiguration
        case ("object-lock", "PUT", .bucket): return .putObjectLockConfiguration
        case ("retention", "GET", .object): return .getObjectRetention
        case ("retention", "PUT", .object): return .putObjectRetention
        case ("legal-hold", "GET", .object): return .getObjectLegalHold
        case ("legal-hold", "PUT", .object): return .putObjectLegalHold
        case (_, "POST", .bucket) where has("delete"): return .unsupportedDeleteObjects
        default: return .unsupportedSubresource
        }
    }

    /// The operation of a request without a subresource of its own.
    private static func plain(_ method: String, _ target: S3Service.Target, _ has: (String) -> Bool, _ copySource: Bool) -> S3Operation {
        switch target {
        case .service:
            return method == "GET" || method == "HEAD" ? .listBuckets : .methodNotAllowed
        case .bucket:
            return bucket(method, has)
        case .object:
            return object(method, has, copySource: copySource)
        }
    }

    /// A bucket's policy (`?policy`) and its status (`?policyStatus`).
    private static func policy(_ method: String, _ has: (String) -> Bool) -> S3Operation {
        switch method {
        case "GET" where has("policy"): .getBucketPolicy
        case "GET": .getBucketPolicyStatus
        case "PUT" where has("policy"): .putBucketPolicy
        case "DELETE" where has("policy"): .deleteBucketPolicy
        default: .methodNotAllowed
        }
    }

    private static func bucket(_ method: String, _ has: (String) -> Bool) -> S3Operation {
        switch method {
        case "PUT" where has("acl"): .putBucketACL
        case "PUT" where has("versioning"): .putBucketVersioning
        case "PUT": .createBucket
        case "HEAD": .headBucket
        case "DELETE": .deleteBucket
        case "GET" where has("uploads"): .listMultipartUploads
        case "GET" where has("location"): .getBucketLocation
        case "GET" where has("versioning"): .getBucketVersioning
        case "GET" where has("acl"): .getBucketACL
        case "GET": .listObjects
        case "POST" where has("delete"): .deleteObjects
        case "POST": .postObject
        default: .methodNotAllowed
        }
    }

    private static func object(_ method: String, _ has: (String) -> Bool, copySource: Bool) -> S3Operation {
        switch method {
        case "POST" where has("uploads"): .createMultipartUpload
        case "POST" where has("uploadId"): .completeMultipartUpload
        case "PUT" where has("uploadId"): .uploadPart
        case "GET" where has("uploadId"): .listParts
        case "DELETE" where has("uploadId"): .abortMultipartUpload
        case "PUT" where copySource: .copyObject
        case "PUT" where has("acl"): .putObjectACL
        case "PUT": .putObject
        case "GET" where has("attributes"): .getObjectAttributes
        case "GET" where has("acl"), "HEAD" where has("acl"): .getObjectACL
        case "GET", "HEAD": .getObject
        case "DELETE": .deleteObject
        default: .methodNotAllowed
        }
    }

    /// The operation of a request, by `classify`.
    init(_ head: HTTPRequestHead, target: S3Service.Target, query: [(name: String, value: [UInt8])]) {
        self = Self.classify(method: head.method, target: target, parameters: query.map(\.name),
                             copySource: head["x-amz-copy-source"] != nil)
    }

    /// What a request needs of the caller's grants. A request refused for an unsupported
    /// subresource (501) needs what the same request without it needs, so that the answer a
    /// caller gets (403 or 501) never depends on a subresource it adds.
    static func requirement(of operation: S3Operation, method: String, target: S3Service.Target, parameters: [String],
                            copySource: Bool, prefix: [UInt8] = []) -> AccessRequirement {
        switch operation {
        case .unsupportedSubresource, .unsupportedDeleteObjects:
            let plain = classify(method: method, target: target,
                                 parameters: parameters.filter {
                                     !unsupportedSubresources.contains($0) && !policySubresources.contains($0) && $0 != "cors" && $0 != "lifecycle"
                                         && !["object-lock", "retention", "legal-hold"].contains($0)
                                 },
                                 copySource: copySource)
            return plain.requirement(method: method, target: target, prefix: prefix)
        default:
            return operation.requirement(method: method, target: target, prefix: prefix)
        }
    }

    /// What the operation needs of the caller's grants (`Grants.permits`), given what it names
    /// and, for a listing, its prefix. CreateBucket needs nothing here: it answers
    /// BucketAlreadyExists or AccessDenied itself (and with a public ACL needs admin on it);
    /// DeleteObjects decides per key. Setting who else may read or write needs admin.
    func requirement(method: String, target: S3Service.Target, prefix: [UInt8] = []) -> AccessRequirement {
        let bucket = target.bucket ?? ""
        let key = Array(bucket.utf8) + [UInt8(ascii: "/")] + Array((target.key ?? "").utf8)
        switch self {
        case .listBuckets: return .someGrant
        case .createBucket: return .nothing
        // DeleteObjects decides per key (AccessDenied entries for those the caller may not
        // delete, as S3 answers), whatever the caller's grants elsewhere in the bucket; with a
        // subresource it is refused (501), after the same check.
        case .deleteObjects, .unsupportedDeleteObjects: return .nothing
        case .headBucket, .getBucketLocation, .getBucketVersioning, .getBucketACL, .getBucketConfiguration, .getBucketPolicy, .getBucketPolicyStatus, .getBucketCORS, .getBucketLifecycle,
             .getObjectLockConfiguration:
            return .bucket(bucket)
        case .deleteBucket: return .wholeBucket(.delete, bucket)
        case .listObjects, .listMultipartUploads: return .listing(Array(bucket.utf8) + [UInt8(ascii: "/")] + prefix)
        case .getObject, .getObjectACL, .getObjectAttributes, .getObjectConfiguration, .getObjectRetention, .getObjectLegalHold:
            return .key(.read, key)
        case .deleteObject: return .key(.delete, key)
        // Aborting and listing parts touch only bytes not stored yet: whoever may upload the key may.
        case .putObject, .copyObject, .createMultipartUpload, .uploadPart, .completeMultipartUpload, .abortMultipartUpload,
             .listParts:
            return .key(.write, key)
        case .putBucketACL, .putBucketVersioning, .putBucketPolicy, .deleteBucketPolicy, .putBucketCORS, .deleteBucketCORS,
             .putBucketLifecycle, .deleteBucketLifecycle, .putBucketNotification, .getBucketNotification,
             .putObjectLockConfiguration:
            return .wholeBucket(.admin, bucket)
        // The form's signature and policy are checked by the operation; the key is known only from the form.
        case .postObject: return .nothing
        // Locking a version keeps it from every key's deletes: as much as an ACL, admin on it.
        case .putObjectACL, .putObjectRetention, .putObjectLegalHold: return .key(.admin, key)
        case .unsupportedSubresource, .methodNotAllowed:
            let action: Grant.Action = method == "GET" || method == "HEAD" ? .read : method == "DELETE" ? .delete : .write
            switch target {
            case .service: return .someGrant
            case .bucket: return .wholeBucket(action, bucket)
            case .object: return .key(action, key)
            }
        }
    }

    /// Whether the request's version id and ACL headers are checked before the operation runs
    /// (everything but the subresources answered or refused above them). The operations that
    /// set an ACL read its headers themselves (`setsACL`).
    var checksVersionAndACLs: Bool {
        switch self {
        case .getBucketConfiguration, .getObjectConfiguration, .unsupportedSubresource, .unsupportedDeleteObjects: false
        default: true
        }
    }

    /// The writes that take `x-amz-object-lock-*` for the version they make.
    var takesObjectLock: Bool {
        self == .putObject || self == .copyObject || self == .createMultipartUpload
    }

    /// The operations that take a `versionId` (any version, not only `null`).
    var takesVersionID: Bool {
        switch self {
        case .getObject, .deleteObject, .putObjectRetention, .getObjectRetention, .putObjectLegalHold, .getObjectLegalHold: true
        default: false
        }
    }

    /// The operations whose `x-amz-acl` header is the setting they make, not a refused extra.
    var setsACL: Bool {
        switch self {
        case .createBucket, .putBucketACL, .putObjectACL: true
        default: false
        }
    }
}

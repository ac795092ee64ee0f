import BlobStore
import HTTPCore
import MicroHTTPD
import Access

/// Runs the one operation `S3Operation.classify` chose; and the answers of the subresources
/// blobd never configures.
extension S3Service {
    /// Runs the operation `classify` chose for a request already authorized: a flat table, one
    /// case per operation.
    // long-functions: flat table (one case per operation, nothing else), allowed over 60 lines.
    func perform(_ operation: S3Operation, _ head: HTTPRequestHead, query: [(name: String, value: [UInt8])], target: Target,
                 authorized: Authorized?, caller: Principal, requestID: String) throws -> HTTPRequestAction {
        if operation.checksVersionAndACLs {
            try Self.refuseVersionsAndACLs(head, query: query, checkingACLs: !operation.setsACL, takingVersions: operation.takesVersionID,
                                           takingLock: operation.takesObjectLock)
        }
        let bucket = target.bucket ?? ""
        let key = target.key ?? ""
        switch operation {
        case .listBuckets:
            return .respond(try listBuckets(query: query, caller: caller, requestID: requestID))
        case .createBucket:
            return try receiveCreateBucket(head, bucket, caller: caller, requestID: requestID)
        case .headBucket:
            let found = try requireBucket(bucket)
            return .respond(HTTPResponse(status: 200, headers: [("x-amz-request-id", requestID),
                                                                ("x-amz-bucket-region", found.region ?? Self.defaultRegion)]))
        case .deleteBucket:
            try store.settings.remove(bucket)
            // Its access settings went with it: this node drops their grants at once.
            try access.directory.reloadIfChanged()
            return .respond(HTTPResponse(status: 204, headers: [("x-amz-request-id", requestID)]))
        case .listObjects:
            try requireBucket(bucket)
            return .respond(try list(bucket, query: query, requestID: requestID))
        case .listMultipartUploads:
            return .respond(try listMultipartUploads(bucket: bucket, query: query, requestID: requestID))
        case .getBucketLocation:
            // us-east-1 answers an empty constraint, as in S3.
            let element = try requireBucket(bucket).region.map { ">\(XML.escape($0))</LocationConstraint>" } ?? "/>"
            return .respond(xmlResponse(XML.declaration + "<LocationConstraint xmlns=\"\(XML.namespace)\"" + element, requestID: requestID))
        case .getBucketVersioning:
            return .respond(try getVersioning(bucket: bucket, requestID: requestID))
        case .getBucketACL, .getObjectACL:
            return .respond(try getACL(bucket: bucket, key: target.key, requestID: requestID))
        case .putBucketACL, .putObjectACL:
            return try receivePutACL(head, bucket: bucket, key: target.key, requestID: requestID)
        case .putBucketPolicy:
            return try receivePutPolicy(head, bucket: bucket, requestID: requestID)
        case .getBucketPolicy:
            return .respond(try getPolicy(bucket: bucket, requestID: requestID))
        case .deleteBucketPolicy:
            return .respond(try deletePolicy(bucket: bucket, requestID: requestID))
        case .getBucketPolicyStatus:
            return .respond(try getPolicyStatus(bucket: bucket, requestID: requestID))
        case .putBucketCORS:
            return try receivePutCORS(head, bucket: bucket, requestID: requestID)
        case .getBucketCORS:
            return .respond(try getCORS(bucket: bucket, requestID: requestID))
        case .deleteBucketCORS:
            return .respond(try deleteCORS(bucket: bucket, requestID: requestID))
        case .postObject:
            return try receivePostObject(head, bucket: bucket, requestID: requestID)
        case .putBucketLifecycle:
            return try receivePutLifecycle(head, bucket: bucket, requestID: requestID)
        case .getBucketLifecycle:
            return .respond(try getLifecycle(bucket: bucket, requestID: requestID))
        case .deleteBucketLifecycle:
            return .respond(try deleteLifecycle(bucket: bucket, requestID: requestID))
        case .putBucketNotification:
            return try receivePutNotification(head, bucket: bucket, requestID: requestID)
        case .getBucketNotification:
            return .respond(try getNotification(bucket: bucket, requestID: requestID))
        case .deleteObjects:
            return try receiveDeleteObjects(head, bucket: bucket, caller: caller, requestID: requestID)
        case .getBucketConfiguration, .getObjectConfiguration, .unsupportedSubresource, .unsupportedDeleteObjects:
            let name = query.first { S3Operation.unsupportedSubresources.contains($0.name) || $0.name == "lifecycle" }?.name ?? ""
            let answers = operation == .getBucketConfiguration || operation == .getObjectConfiguration
            if answers, let answer = try unconfigured(name, target: target, requestID: requestID) {
                return .respond(answer)
            }
            throw S3Error(.notImplemented, "blobd's S3 dialect does not support '\(name)'.")
        case .putBucketVersioning:
            return try receivePutVersioning(head, bucket: bucket, requestID: requestID)
        case .putObjectLockConfiguration:
            return try receivePutObjectLock(head, bucket: bucket, requestID: requestID)
        case .getObjectLockConfiguration:
            return .respond(try getObjectLock(bucket: bucket, requestID: requestID))
        case .putObjectRetention:
            return try receivePutRetention(head, bucket: bucket, key: key, query: query, caller: caller, requestID: requestID)
        case .getObjectRetention:
            return .respond(try getRetention(bucket: bucket, key: key, query: query, requestID: requestID))
        case .putObjectLegalHold:
            return try receivePutLegalHold(head, bucket: bucket, key: key, query: query, requestID: requestID)
        case .getObjectLegalHold:
            return .respond(try getLegalHold(bucket: bucket, key: key, query: query, requestID: requestID))
        case .methodNotAllowed:
            throw S3Error(.methodNotAllowed, "The specified method is not allowed against this resource.")
        case .createMultipartUpload:
            return try preCreate(head, bucket: bucket, key: key, requestID: requestID) { [self] head in
                .respond(try createMultipart(head, bucket: bucket, key: key, authorized: authorized, caller: caller,
                                             requestID: requestID))
            }
        case .completeMultipartUpload:
            return try receiveComplete(head, bucket: bucket, key: key, query: query, caller: caller, requestID: requestID)
        case .uploadPart:
            return try receivePart(head, bucket: bucket, key: key, query: query, authorized: authorized, caller: caller,
                                   requestID: requestID)
        case .listParts:
            return .respond(try listParts(bucket: bucket, key: key, query: query, requestID: requestID))
        case .abortMultipartUpload:
            return .respond(try abortMultipart(bucket: bucket, key: key, query: query, requestID: requestID))
        case .copyObject:
            return try copyObject(head, bucket: bucket, key: key, caller: caller, requestID: requestID)
        case .putObject:
            return try preCreate(head, bucket: bucket, key: key, requestID: requestID) { [self] head in
                try receiveObject(head, bucket: bucket, key: key, authorized: authorized, caller: caller, requestID: requestID)
            }
        case .getObjectAttributes:
            return .respond(try objectAttributes(head, bucket: bucket, key: key, requestID: requestID))
        case .getObject:
            return try read(head, bucket: bucket, key: key, query: query, anonymous: caller.isAnonymous && !access.isOpen,
                            requestID: requestID)
        case .deleteObject:
            return .respond(try deleteObject(head, bucket: bucket, key: key, query: query, caller: caller, requestID: requestID))
        }
    }

    /// A version id other than `null` on an operation that takes none (`takingVersions`), and
    /// on a write the ACLs blobd does not keep.
    static func refuseVersionsAndACLs(_ head: HTTPRequestHead, query: [(name: String, value: [UInt8])],
                                      checkingACLs: Bool = true, takingVersions: Bool = false, takingLock: Bool = false) throws(S3Error) {
        if !takingVersions, let version = query.first(where: { $0.name == "versionId" }), !version.value.elementsEqual("null".utf8) {
            throw S3Error(.notImplemented, "blobd does not take a versionId on this operation (only 'null').")
        }
        if checkingACLs && (head.method == "PUT" || head.method == "POST") {
            try refuseACLs(head)
            try refuseUnkeptObjectSettings(head)
        }
        if !takingLock && (head.method == "PUT" || head.method == "POST") { try refuseObjectLock(head) }
    }

    /// A request other than PutObject, CopyObject and CreateMultipartUpload that names a
    /// retention or legal hold (`x-amz-object-lock-*`) is refused (501) rather than ignored;
    /// those three take them (`S3Service+ObjectLock.swift`).
    static func refuseObjectLock(_ head: HTTPRequestHead) throws(S3Error) {
        for field in head.headers {
            let name = field.name.lowercased()
            if name.hasPrefix("x-amz-object-lock-") {
                throw S3Error(.notImplemented, "blobd does not support Object Lock yet (\(field.name)); nothing was stored.")
            }
        }
    }

    /// The storage classes S3 names; blobd keeps every object as STANDARD.
    static let storageClasses: Set<String> = ["STANDARD", "REDUCED_REDUNDANCY", "STANDARD_IA", "ONEZONE_IA", "INTELLIGENT_TIERING",
                                              "GLACIER", "DEEP_ARCHIVE", "OUTPOSTS", "GLACIER_IR", "SNOW", "EXPRESS_ONEZONE"]

    /// What a write may ask to be kept with an object that blobd does not keep: server-side
    /// encryption (SSE-S3, SSE-KMS, SSE-C, also of a copy's source), tags, a website redirect,
    /// a storage class other than STANDARD. Refused (501) rather than stored without it; a class
    /// S3 does not know is InvalidStorageClass, as in S3.
    static func refuseUnkeptObjectSettings(_ head: HTTPRequestHead) throws(S3Error) {
        for field in head.headers {
            let name = field.name.lowercased()
            if name == "x-amz-storage-class" {
                let value = String(field.value.trimmingOWS())
                if value == "STANDARD" { continue }
                guard storageClasses.contains(value) else { throw S3Error(.invalidStorageClass, "The storage class you specified is not valid.") }
                throw S3Error(.notImplemented, "blobd keeps every object in the STANDARD storage class; \(value) is not supported.")
            }
            if name.hasPrefix("x-amz-server-side-encryption") || name.hasPrefix("x-amz-copy-source-server-side-encryption")
                || name == "x-amz-tagging" || name == "x-amz-website-redirect-location" {
                throw S3Error(.notImplemented, "blobd's S3 dialect does not support \(field.name); nothing was stored.")
            }
        }
    }

    /// Canned ACLs and grants on a write: an upload keeps its object private to the keys (a
    /// public object is made by PutObjectAcl), so only the ACLs that say so (`private`, and
    /// `bucket-owner-full-control`, which rclone and s3cmd may send) are accepted; the rest get
    /// NotImplemented rather than being ignored.
    static func refuseACLs(_ head: HTTPRequestHead) throws(S3Error) {
        if let acl = head["x-amz-acl"], !["private", "bucket-owner-full-control"].contains(acl.trimmingOWS()) {
            throw S3Error(.notImplemented, "blobd's S3 dialect keeps objects private; the canned ACL '\(acl)' is not supported.")
        }
        try refuseGrantHeaders(head)
    }

    /// A GET of a configuration blobd never has (policy, lifecycle, tags, ...) answers as S3 does
    /// for a bucket or object without one, so tools that read every configuration (Terraform,
    /// s3-tests' set-up) go on; setting one stays NotImplemented. Nil: no such answer (torrent).
    func unconfigured(_ name: String, target: Target, requestID: String) throws -> HTTPResponse? {
        let xml = { (body: String) in self.xmlResponse(XML.declaration + body, requestID: requestID) }
        switch target {
        case .service:
            return nil
        case .bucket(let bucket):
            try requireBucket(bucket)
            switch name {
            case "lifecycle": throw S3Error(.noSuchLifecycleConfiguration, "The lifecycle configuration does not exist")
            case "cors": throw S3Error(.noSuchCORSConfiguration, "The CORS configuration does not exist")
            case "website": throw S3Error(.noSuchWebsiteConfiguration, "The specified bucket does not have a website configuration")
            case "replication": throw S3Error(.replicationConfigurationNotFound, "The replication configuration was not found")
            case "encryption":
                throw S3Error(.encryptionConfigurationNotFound, "The server side encryption configuration was not found")
            case "object-lock": throw S3Error(.objectLockConfigurationNotFound, "Object Lock configuration does not exist for this bucket")
            case "tagging": throw S3Error(.noSuchTagSet, "The TagSet does not exist")
            case "logging": return xml("<BucketLoggingStatus xmlns=\"\(XML.namespace)\"/>")
            case "notification": return xml("<NotificationConfiguration xmlns=\"\(XML.namespace)\"/>")
            case "accelerate": return xml("<AccelerateConfiguration xmlns=\"\(XML.namespace)\"/>")
            case "requestPayment":
                return xml("<RequestPaymentConfiguration xmlns=\"\(XML.namespace)\"><Payer>BucketOwner</Payer></RequestPaymentConfiguration>")
            default: return nil
            }
        case .object(let bucket, let key):
            guard ["tagging", "retention", "legal-hold"].contains(name) else { return nil }
            guard try store.record(for: try blobKey(bucket, key)) != nil else { throw StoreError.notFound }
            if name == "tagging" { return xml("<Tagging xmlns=\"\(XML.namespace)\"><TagSet/></Tagging>") }
            throw S3Error(.invalidRequest, "Bucket is missing Object Lock Configuration")
        }
    }

    static let owner = "<Owner><ID>blobd</ID><DisplayName>blobd</DisplayName></Owner>"
}

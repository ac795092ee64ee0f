import BlobStore
import BlobCore
import HTTPCore
import MicroHTTPD

/// Canned ACLs and bucket policies (API contract v1.2, S3 access settings): each becomes grants
/// of anonymous or authenticated callers, stored in the catalog and computed by `KeyDirectory`,
/// so every dialect and every node sees them within about a second (this node at once).
extension S3Service {
    /// PutBucketAcl and PutObjectAcl: the canned ACL of `x-amz-acl`. An ACL body (grants in
    /// XML) and `x-amz-grant-*` headers are refused with 501, naming them.
    func receivePutACL(_ head: HTTPRequestHead, bucket: String, key: String?, requestID: String) throws -> HTTPRequestAction {
        try Self.refuseGrantHeaders(head)
        guard let header = head["x-amz-acl"] else {
            throw S3Error(.notImplemented, "blobd sets ACLs only by x-amz-acl (a canned ACL); an AccessControlPolicy body is not supported.")
        }
        let acl = try Self.cannedACL(header, forObject: key != nil)
        if let key {
            guard try store.record(for: try blobKey(bucket, key)) != nil else { throw StoreError.notFound }
        } else {
            try requireBucket(bucket)
        }
        let tooLarge = S3Error(.notImplemented, "blobd sets ACLs only by x-amz-acl; an AccessControlPolicy body is not supported.")
        return try receiveSetting(head, bucket: bucket, limit: 64 * 1024, tooLarge: tooLarge, requestID: requestID) { [self] body in
            guard body.isEmpty else {
                throw S3Error(.notImplemented, "blobd sets ACLs only by x-amz-acl; an AccessControlPolicy body with grants is not supported.")
            }
            try setAccess(bucket, key.map { .objectACL($0) } ?? .acl, to: acl == .private ? nil : acl.rawValue)
            return HTTPResponse(status: 200, headers: [("x-amz-request-id", requestID)])
        }
    }

    /// PutBucketPolicy: a policy of the common public shape (`BucketPolicy`); MalformedPolicy
    /// for one that is not valid, 501 naming the element blobd does not keep.
    func receivePutPolicy(_ head: HTTPRequestHead, bucket: String, requestID: String) throws -> HTTPRequestAction {
        try requireBucket(bucket)
        let tooLarge = S3Error(.malformedPolicy, "Policies must be at most 20 KB.")
        return try receiveSetting(head, bucket: bucket, limit: BucketPolicy.maximumSize, tooLarge: tooLarge, requestID: requestID) {
            [self] body in
            do throws(BucketPolicy.ParseError) {
                _ = try BucketPolicy(parsing: body, bucket: bucket)
            } catch {
                switch error {
                case .malformed(let text): throw S3Error(.malformedPolicy, text)
                case .unsupported(let element): throw S3Error(.notImplemented, "blobd's bucket policies do not support \(element).")
                }
            }
            try setAccess(bucket, .policy, to: String(decoding: body, as: UTF8.self))
            return HTTPResponse(status: 204, headers: [("x-amz-request-id", requestID)])
        }
    }

    /// Receives a small settings body (`tooLarge` past `limit`), checks its digest, and runs `apply` on it.
    func receiveSetting(_ head: HTTPRequestHead, bucket: String, limit: Int, tooLarge: S3Error, requestID: String,
                                _ apply: @escaping ([UInt8]) throws -> HTTPResponse) throws -> HTTPRequestAction {
        let expected = try Self.bufferedPayloadHash(head)
        return .receive(BufferedBody(limit: limit, committers: committers) { [self] body in
            do {
                try Self.check(body, against: expected)
                guard let body else { throw tooLarge }
                return try apply(body)
            } catch {
                return failure(error, head: head, bucket: bucket, key: nil, requestID: requestID)
            }
        })
    }

    /// Stores a setting (nil removes it), in force on this node at once.
    func setAccess(_ bucket: String, _ name: BucketAccessSetting.Name, to value: String?) throws {
        try store.settings.set(bucket, name, to: value)
    }

    /// The setting `name` of a bucket, as stored.
    func accessSetting(_ bucket: String, _ name: BucketAccessSetting.Name) throws -> String? {
        try store.settings.stored(bucket, name)
    }

    /// DeleteBucketPolicy: 204, with or without a policy.
    func deletePolicy(bucket: String, requestID: String) throws -> HTTPResponse {
        try requireBucket(bucket)
        try setAccess(bucket, .policy, to: nil)
        return HTTPResponse(status: 204, headers: [("x-amz-request-id", requestID)])
    }

    /// GetBucketPolicy: the policy as it was set; NoSuchBucketPolicy without one.
    func getPolicy(bucket: String, requestID: String) throws -> HTTPResponse {
        try requireBucket(bucket)
        guard let policy = try accessSetting(bucket, .policy) else {
            throw S3Error(.noSuchBucketPolicy, "The bucket policy does not exist")
        }
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/json"), ("x-amz-request-id", requestID)],
                            body: .bytes(Array(policy.utf8)))
    }

    /// GetBucketPolicyStatus: public when a policy is set (blobd keeps only public ones).
    func getPolicyStatus(bucket: String, requestID: String) throws -> HTTPResponse {
        try requireBucket(bucket)
        let isPublic = try accessSetting(bucket, .policy) != nil
        return xmlResponse(XML.declaration + "<PolicyStatus xmlns=\"\(XML.namespace)\"><IsPublic>\(isPublic)</IsPublic></PolicyStatus>",
                           requestID: requestID)
    }

    /// GetBucketAcl and GetObjectAcl: the owner's FULL_CONTROL and the groups' grants in force.
    func getACL(bucket: String, key: String?, requestID: String) throws -> HTTPResponse {
        if let key {
            guard try store.record(for: try blobKey(bucket, key)) != nil else { throw StoreError.notFound }
        } else {
            try requireBucket(bucket)
        }
        let stored = try accessSetting(bucket, key.map { .objectACL($0) } ?? .acl)
        return xmlResponse(Self.accessControlPolicy(stored.flatMap(CannedACL.init(rawValue:)) ?? .private), requestID: requestID)
    }

    /// The canned ACL of a header; 501 for one blobd does not keep, 400 for none S3 knows.
    static func cannedACL(_ header: String, forObject: Bool) throws(S3Error) -> CannedACL {
        do throws(CannedACL.ParseError) {
            return try CannedACL(header: header, forObject: forObject)
        } catch {
            switch error {
            case .unsupported(let what): throw S3Error(.notImplemented, "blobd's S3 dialect does not support \(what).")
            case .invalid(let text): throw S3Error(.invalidArgument, "'\(text)' is not a canned ACL.")
            }
        }
    }

    /// `x-amz-grant-*` headers: ACL grants blobd does not keep.
    static func refuseGrantHeaders(_ head: HTTPRequestHead) throws(S3Error) {
        if let grant = head.headers.first(where: { $0.name.lowercased().hasPrefix("x-amz-grant-") }) {
            throw S3Error(.notImplemented, "blobd's S3 dialect does not support ACL grants (\(grant.name)).")
        }
    }

    static let groupGrantee = "<Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"Group\"><URI>"
        + "http://acs.amazonaws.com/groups/global/"

    /// The AccessControlPolicy of a canned ACL.
    static func accessControlPolicy(_ acl: CannedACL) -> String {
        func group(_ name: String, _ permission: String) -> String {
            "<Grant>" + groupGrantee + name + "</URI></Grantee><Permission>" + permission + "</Permission></Grant>"
        }
        let groups = switch acl {
        case .private: ""
        case .publicRead: group("AllUsers", "READ")
        case .publicReadWrite: group("AllUsers", "READ") + group("AllUsers", "WRITE")
        case .authenticatedRead: group("AuthenticatedUsers", "READ")
        }
        return XML.declaration + "<AccessControlPolicy xmlns=\"\(XML.namespace)\">" + owner
            + "<AccessControlList><Grant><Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"CanonicalUser\">"
            + "<ID>blobd</ID><DisplayName>blobd</DisplayName></Grantee><Permission>FULL_CONTROL</Permission></Grant>"
            + groups + "</AccessControlList></AccessControlPolicy>"
    }
}

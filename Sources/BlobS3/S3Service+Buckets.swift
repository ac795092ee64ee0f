import HTTPCore
import BlobStore
import MicroHTTPD

#if canImport(Glibc)
import Glibc
import Access
#endif

/// Buckets: naming rules, CreateBucket with its region, ListBuckets.
extension S3Service {
    /// The region of a bucket created without a LocationConstraint.
    static let defaultRegion = "us-east-1"

    /// CreateBucket, with an optional `CreateBucketConfiguration` naming its LocationConstraint
    /// and an optional canned ACL (`x-amz-acl`).
    /// blobd serves every region's requests alike; the region is recorded and answered (by
    /// GetBucketLocation, HeadBucket and ListBuckets) so that a client which asked for one is
    /// not told another.
    func receiveCreateBucket(_ head: HTTPRequestHead, _ name: String, caller: Principal, requestID: String) throws -> HTTPRequestAction {
        guard Bucket.isValidName(name) else {
            throw S3Error(.invalidBucketName, "The specified bucket is not valid.")
        }
        // Creating a bucket needs write on all of it. A caller without it learns that the name
        // is taken when it is (as S3 answers for another account's bucket), else AccessDenied.
        try Self.refuseGrantHeaders(head)
        var acl = CannedACL.private
        if let header = head["x-amz-acl"] { acl = try Self.cannedACL(header, forObject: false) }
        guard caller.grants.allows(.write, wholeBucket: name) else {
            if try store.buckets.bucket(name) != nil {
                throw S3Error(.bucketAlreadyExists, "The requested bucket name is not available. Please select a different name and try again.")
            }
            throw S3Error(.accessDenied, "Access Denied: creating bucket \(name) needs write on all of it.")
        }
        // A public bucket lets others in: that needs admin on it, as PutBucketAcl does.
        guard acl == .private || caller.grants.allows(.admin, wholeBucket: name) else {
            throw S3Error(.accessDenied, "Access Denied: creating bucket \(name) with the ACL '\(acl.rawValue)' needs admin on all of it.")
        }
        // With Object Lock (versioning on for good): admin on it, as its lock configuration needs.
        let locked = head["x-amz-bucket-object-lock-enabled"]?.trimmingOWS().lowercased() == "true"
        guard !locked || caller.grants.allows(.admin, wholeBucket: name) else {
            throw S3Error(.accessDenied, "Access Denied: creating bucket \(name) with Object Lock needs admin on all of it.")
        }
        let expected = try Self.bufferedPayloadHash(head)
        return .receive(BufferedBody(limit: 64 * 1024, committers: committers) { [self] body in
            do {
                try Self.check(body, against: expected)
                let bucket = Bucket(name: name, created: store.now(), region: try Self.locationConstraint(body))
                // The bucket and its settings in one transaction: a failure leaves no bucket half made.
                var settings: [BucketAccessSetting] = []
                if acl != .private { settings.append(BucketAccessSetting(bucket: name, name: .acl, value: acl.rawValue)) }
                if locked { settings += BucketAccessSetting.objectLock(name) }
                guard try store.settings.create(bucket, with: settings) else {
                    throw S3Error(.bucketAlreadyOwnedByYou, "Your previous request to create the named bucket succeeded and you already own it.")
                }
                return HTTPResponse(status: 200, headers: [("Location", "/" + name), ("x-amz-request-id", requestID)])
            } catch {
                return failure(error, head: head, bucket: name, key: nil, requestID: requestID)
            }
        })
    }

    /// The region a CreateBucket body names; nil for none, an empty one, or us-east-1.
    static func locationConstraint(_ body: [UInt8]?) throws -> String? {
        guard let body else { throw S3Error(.malformedXML, "The CreateBucketConfiguration is too large.") }
        guard !body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) else { return nil }
        let root = try XML.parse(body, maxChildren: 16)
        guard root.name == "CreateBucketConfiguration" else { throw XMLReader.malformed }
        guard let constraint = root.value("LocationConstraint"), !constraint.isEmpty, constraint != defaultRegion else { return nil }
        // Region names (eu-west-1, and the legacy EU): letters, digits and dashes.
        guard constraint.utf8.count <= 64,
              constraint.utf8.allSatisfy({ $0 == UInt8(ascii: "-") || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0)
                                           || (0x61...0x7A).contains($0) }) else {
            throw S3Error(.invalidLocationConstraint, "The specified location-constraint is not valid.")
        }
        return constraint
    }

    @discardableResult
    func requireBucket(_ name: String) throws -> Bucket {
        guard let bucket = try store.buckets.bucket(name) else { throw S3Error(StoreError.bucketNotFound) }
        return bucket
    }

    /// ListBuckets, in name order: `prefix`, and pages of `max-buckets` (1 to 10,000; all of
    /// them when absent) resumed after a `continuation-token` (the last name of the page before).
    func listBuckets(query: [(name: String, value: [UInt8])], caller: Principal, requestID: String) throws -> HTTPResponse {
        let prefix = Self.value("prefix", in: query) ?? ""
        let after = Self.value("continuation-token", in: query)
        var limit = Int.max
        if let text = Self.value("max-buckets", in: query) {
            guard let number = Int(text), (1...10_000).contains(number) else {
                throw S3Error(.invalidArgument, "max-buckets must be an integer from 1 to 10000.")
            }
            limit = number
        }
        let matching = try store.buckets.buckets().filter { bucket in
            bucket.name.hasPrefix(prefix) && (after.map { $0.utf8.lexicographicallyPrecedes(bucket.name.utf8) } ?? true)
                && caller.grants.touches(bucket: bucket.name)
        }
        var xml = XML.declaration + "<ListAllMyBucketsResult xmlns=\"\(XML.namespace)\">" + Self.owner + "<Buckets>"
        for bucket in matching.prefix(limit) {
            xml += "<Bucket>" + XML.element("Name", bucket.name)
                + XML.element("CreationDate", Self.isoDate(bucket.created))
                + XML.element("BucketRegion", bucket.region ?? Self.defaultRegion) + "</Bucket>"
        }
        xml += "</Buckets>"
        if matching.count > limit { xml += XML.element("ContinuationToken", matching[limit - 1].name) }
        if !prefix.isEmpty { xml += XML.element("Prefix", prefix) }
        xml += "</ListAllMyBucketsResult>"
        return xmlResponse(xml, requestID: requestID)
    }

    /// `2026-11-22T20:04:44.000Z`, as S3 writes dates in XML.
    static func isoDate(_ seconds: Int64) -> String {
        String(HTTPDate.formatRFC3339(seconds).dropLast()) + ".000Z"
    }
}

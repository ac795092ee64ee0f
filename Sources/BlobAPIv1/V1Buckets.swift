import BlobStore
import Foundation
import HTTPCore
import MicroHTTPD

#if canImport(Glibc)
import Glibc
import Access
#endif

/// Buckets through /v1 (issue 35): `GET /v1/buckets`, `PUT /v1/buckets/NAME` and
/// `DELETE /v1/buckets/NAME`. They are the buckets S3 sees (one namespace for every dialect):
/// one made here answers S3's HeadBucket and ListBuckets, and one made by S3's CreateBucket is
/// listed here. Names follow S3's rules (`Bucket.isValidName`).
extension BlobService {
    /// What a PUT's optional body asks of a new bucket.
    struct BucketRequest: Equatable {
        /// `Enabled` or `Suspended`; nil when the body names none.
        var versioning: BucketVersioning?
        /// Object Lock (versioning on for good).
        var objectLock = false

        /// The settings the bucket is made with, in its creating transaction.
        func settings(_ bucket: String) -> [BucketAccessSetting] {
            if objectLock { return BucketAccessSetting.objectLock(bucket) }
            switch versioning {
            case .enabled?: return [BucketAccessSetting(bucket: bucket, name: .versioning, value: "Enabled")]
            case .suspended?: return [BucketAccessSetting(bucket: bucket, name: .versioning, value: "Suspended")]
            case .unversioned?, nil: return []
            }
        }
    }

    /// GET /v1/buckets: `{"buckets": [...]}` in name order, only those some grant of the caller
    /// touches (as S3's ListBuckets).
    func listBuckets(_ caller: Principal) throws -> HTTPResponse {
        try access.directory.reloadIfChanged()
        let buckets = try store.buckets.buckets().filter { caller.grants.touches(bucket: $0.name) }
        return Self.jsonResponse(status: 200, .object([("buckets", .array(buckets.map(bucketJSON)))]))
    }

    /// `{"name", "created", "versioning"?, "object_lock"?}`: `versioning` only once it was set,
    /// `object_lock` only when on.
    func bucketJSON(_ bucket: Bucket) -> JSON {
        var members: [(String, JSON)] = [("name", .string(bucket.name)), ("created", .string(HTTPDate.formatRFC3339(bucket.created)))]
        switch store.settings.versioning(of: bucket.name[...]) {
        case .unversioned: break
        case .enabled: members.append(("versioning", .string("Enabled")))
        case .suspended: members.append(("versioning", .string("Suspended")))
        }
        if store.settings.objectLock(of: bucket.name[...]) != nil { members.append(("object_lock", .bool(true))) }
        return .object(members)
    }

    /// PUT /v1/buckets/NAME: 201 with `Location` when made, 200 when it exists with the settings
    /// the body asks (409 when with others). Versioning or Object Lock need `admin` on the whole
    /// bucket besides the route's `write`.
    func putBucket(_ head: HTTPRequestHead, _ raw: ArraySlice<UInt8>, caller: Principal) throws -> HTTPRequestAction {
        let name = String(decoding: raw, as: UTF8.self)
        guard Bucket.isValidName(name) else { throw HTTPError.badRequest(Self.bucketNameRule(name)) }
        if head["Content-Length"].map({ $0 != "0" }) ?? (head["Transfer-Encoding"] != nil) { try Self.requireJSON(head) }
        return .receive(BufferedBody(limit: Self.maxAdminBody, committers: committers) { [self] body in
            do {
                let request = try Self.bucketRequest(body)
                if request != BucketRequest(), !caller.grants.allows(.admin, wholeBucket: name) {
                    throw HTTPError.forbidden(.wholeBucket(.admin, name))
                }
                let settings = request.settings(name)
                let bucket = Bucket(name: name, created: store.now())
                guard try store.settings.create(bucket, with: settings) else { return try existingBucket(name, request) }
                return Self.jsonResponse(status: 201, bucketJSON(bucket), headers: [("Location", "/v1/buckets/" + name)])
            } catch {
                return failure(error)
            }
        })
    }

    /// The 200 of a PUT on a bucket that exists, if it has what the body asks (nothing asked is
    /// always had); else 409, since a PUT of a bucket never changes its settings.
    private func existingBucket(_ name: String, _ request: BucketRequest) throws -> HTTPResponse {
        try access.directory.reloadIfChanged()
        guard let bucket = try store.buckets.bucket(name) else { throw StoreError.bucketNotFound }
        let versioning = store.settings.versioning(of: name[...]), locked = store.settings.objectLock(of: name[...]) != nil
        let asked = request.objectLock ? .enabled : request.versioning
        guard (asked == nil || asked == versioning) && (!request.objectLock || locked) else {
            throw HTTPError.conflict("Bucket \(name) exists with other settings (versioning \(versioning.rawValue), Object Lock "
                                     + "\(locked ? "on" : "off")); a PUT does not change them: use S3's PutBucketVersioning.")
        }
        return Self.jsonResponse(status: 200, bucketJSON(bucket))
    }

    /// The body of a PUT: empty, or `{"versioning": "Enabled"|"Suspended", "object_lock": BOOL}`,
    /// each optional. Object Lock keeps versioning enabled, so it does not go with `Suspended`.
    static func bucketRequest(_ body: [UInt8]?) throws -> BucketRequest {
        if let body, body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return BucketRequest() }
        let object = try jsonObject(body)
        if let unknown = object.keys.sorted().first(where: { $0 != "versioning" && $0 != "object_lock" }) {
            throw HTTPError.badRequest("Unknown member \"\(unknown)\": the body is {\"versioning\": \"Enabled\"|\"Suspended\", \"object_lock\": true}.")
        }
        var request = BucketRequest()
        if let value = object["versioning"] {
            switch value as? String {
            case "Enabled": request.versioning = .enabled
            case "Suspended": request.versioning = .suspended
            default: throw HTTPError.badRequest("\"versioning\" is \"Enabled\" or \"Suspended\".")
            }
        }
        if let value = object["object_lock"] {
            // A JSON true or false is an NSNumber of type "c"; any other number is no boolean.
            guard let flag = value as? NSNumber, String(cString: flag.objCType) == "c" else {
                throw HTTPError.badRequest("\"object_lock\" is true or false.")
            }
            request.objectLock = flag.boolValue
        }
        if request.objectLock, request.versioning == .suspended {
            throw HTTPError.badRequest("A bucket with Object Lock keeps versioning enabled: \"versioning\": \"Suspended\" does not go with it.")
        }
        return request
    }

    /// DELETE /v1/buckets/NAME: 204; 404 when there is none, 409 while it holds objects (or
    /// versions, or delete markers). Its settings go with it.
    func deleteBucket(_ raw: ArraySlice<UInt8>) throws -> HTTPResponse {
        try store.settings.remove(try Self.bucketName(raw))
        try access.directory.reloadIfChanged()
        return HTTPResponse(status: 204, headers: [Self.noStore])
    }

    /// Why `name` is no bucket name, in words a person can act on.
    static func bucketNameRule(_ name: String) -> String {
        let rule = "A bucket name is 3 to 63 lowercase letters, digits, dots and hyphens, starting and ending with a "
            + "letter or digit (S3's rules, which every dialect of blobd applies)"
        let shown = name.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F } ? "This name" : "\"\(name)\""
        return "\(shown) is not a valid bucket name. \(rule); no \"..\", \".-\" or \"-.\", not an IPv4 address, "
            + "and none of the prefixes and suffixes AWS reserves (xn--, sthree-, -s3alias, ...)."
    }
}

extension BlobService {
    /// Before a /v1 write to `key`: its bucket (the first segment of a key with more than one)
    /// is an S3 bucket, made here if it is not one yet, so that every dialect sees one namespace;
    /// a first segment S3 would refuse as a bucket name is 400. A key of one segment (a
    /// content-addressed blob's) is in no bucket.
    func ensureBucket(of key: BlobKey) throws {
        guard let slash = key.bytes.firstIndex(of: UInt8(ascii: "/")) else { return }
        let name = String(decoding: key.bytes[..<slash], as: UTF8.self)
        guard Bucket.isValidName(name) else {
            throw HTTPError.badRequest("'\(name)' is not a bucket name: a key's first segment names its bucket, which takes "
                                       + "3 to 63 lowercase letters, digits, '.' and '-', as S3 requires.")
        }
        if try store.buckets.bucket(name) == nil {
            _ = try store.buckets.createBucket(Bucket(name: name, created: store.now()))
        }
    }
}

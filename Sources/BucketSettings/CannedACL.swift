import BlobCore

/// An S3 canned ACL that blobd keeps (API contract v1.2, S3 access settings): each becomes
/// grants of anonymous or authenticated callers on the bucket, or on one object.
public enum CannedACL: String, Sendable, CaseIterable {
    case `private`
    /// Anyone may read (GET, HEAD, and list a bucket).
    case publicRead = "public-read"
    /// Anyone may read and write (a bucket only); deleting stays with the keys.
    case publicReadWrite = "public-read-write"
    /// Any caller with a credential may read; anonymous callers may not.
    case authenticatedRead = "authenticated-read"

    /// Why an `x-amz-acl` value was refused.
    public enum ParseError: Error, Equatable, Sendable {
        /// A canned ACL S3 knows that blobd does not keep (answered 501, naming it).
        case unsupported(String)
        /// Not a canned ACL at all (400).
        case invalid(String)
    }

    /// S3's other canned ACLs, which blobd refuses with 501.
    static let unsupported: Set<String> = ["aws-exec-read", "bucket-owner-read", "log-delivery-write"]

    /// The canned ACL of an `x-amz-acl` header, for a bucket or an object. `bucket-owner-full-control`
    /// means private (the caller owns every bucket it may set it on); public-read-write on an
    /// object is refused, since object WRITE means nothing in S3 and blobd will not widen it.
    public init(header: String, forObject: Bool) throws(ParseError) {
        let text = String(header.trimmingOWS())
        if text == "bucket-owner-full-control" {
            self = .private
            return
        }
        if Self.unsupported.contains(text) { throw .unsupported("the canned ACL '\(text)'") }
        guard let acl = CannedACL(rawValue: text) else { throw .invalid(text) }
        if forObject && acl == .publicReadWrite { throw .unsupported("the canned ACL 'public-read-write' on an object") }
        self = acl
    }

    /// The grants it gives: to anonymous callers, and to callers with a credential.
    public func grants(on pattern: Grant.Pattern) -> (anonymous: [Grant], authenticated: [Grant]) {
        switch self {
        case .private: ([], [])
        case .publicRead: ([Grant(.read, pattern)], [])
        case .publicReadWrite: ([Grant(.read, pattern), Grant(.write, pattern)], [])
        case .authenticatedRead: ([], [Grant(.read, pattern)])
        }
    }
}

/// The grants the buckets' access settings give, computed in one place (by `KeyDirectory`
/// whenever the access version moves), so every node and every dialect holds the same.
public struct SettingGrants: Sendable, Equatable {
    /// What callers without a credential may do (and, with it, every caller).
    public var anonymous: [Grant] = []
    /// What every caller with a credential may do in addition.
    public var authenticated: [Grant] = []
    /// Settings that no longer parse (they grant nothing), for the log.
    public var unreadable: [String] = []

    public init() {}

    /// The grants of every setting: canned ACLs of buckets and objects, and bucket policies.
    public init(_ settings: [BucketAccessSetting]) {
        for setting in settings {
            switch setting.name {
            case .acl, .objectACL:
                let pattern: Grant.Pattern
                if case .objectACL(let key) = setting.name {
                    pattern = .key(Array((setting.bucket + "/" + key).utf8))
                } else {
                    pattern = .bucket(setting.bucket)
                }
                guard let acl = CannedACL(rawValue: setting.value) else {
                    unreadable.append("\(setting.bucket) \(setting.name.stored)")
                    continue
                }
                let given = acl.grants(on: pattern)
                anonymous += given.anonymous
                authenticated += given.authenticated
            case .policy:
                do throws(BucketPolicy.ParseError) {
                    anonymous += try BucketPolicy(parsing: Array(setting.value.utf8), bucket: setting.bucket).grants
                } catch {
                    unreadable.append("\(setting.bucket) policy: \(error)")
                }
            case .cors, .lifecycle, .notifications, .versioning, .objectLock:
                continue
            }
        }
    }
}

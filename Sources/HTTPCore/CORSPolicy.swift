import MicroHTTPD
import BlobStore

/// `--cors-origin` (repeatable; `*` for any) and `--cors-allow-credentials`.
public struct CORSSettings: Sendable, Equatable {
    public var origins: [String]
    public var allowCredentials: Bool

    public init(origins: [String] = [], allowCredentials: Bool = false) {
        self.origins = origins
        self.allowCredentials = allowCredentials
    }
}

/// Which CORS rules answer a request, and the headers they add, for both dialects.
///
/// A request on a bucket's keys follows that bucket's rules when it has any, else the global
/// flags; every other request (tus URLs, admin and operational routes) follows the global flags.
/// The global flags allow their origins every method blobd serves (tus's PATCH too) and any
/// request header. A rule whose origin is `*` answers `Access-Control-Allow-Origin: *` unless
/// credentials are on; any other match echoes the origin. Credentials are allowed by
/// `--cors-allow-credentials`, and, as in S3, by a bucket rule matched by an origin that is not `*`.
public final class CORSPolicy: Sendable {
    private let global: CORSConfiguration?
    private let allowCredentials: Bool
    private let settings: BucketSettingsService

    /// What every actual answer exposes besides the matched rule's `ExposeHeader`s.
    public static let exposedByDefault = [
        "ETag", "Location", "Content-Range", "Content-Digest", "Repr-Digest", "Content-Disposition", "Accept-Ranges",
        "Blob-Version", "Upload-Offset", "Upload-Length", "Upload-Expires", "Upload-Metadata", "Upload-Defer-Length",
        "Upload-Concat", "Tus-Resumable", "Tus-Version", "Tus-Extension", "Tus-Max-Size", "Tus-Checksum-Algorithm",
        "x-amz-request-id", "x-amz-version-id", "x-amz-checksum-crc32", "x-amz-checksum-crc32c",
        "x-amz-checksum-crc64nvme", "x-amz-checksum-sha1", "x-amz-checksum-sha256", "x-amz-checksum-type",
    ]
    private static let exposedText = exposedByDefault.joined(separator: ", ")

    public init(_ settings: CORSSettings, buckets: BucketSettingsService) {
        allowCredentials = settings.allowCredentials
        self.settings = buckets
        global = settings.origins.isEmpty ? nil : CORSConfiguration(global: settings.origins)
    }

    /// Whether any rule could apply anywhere: when false, answers are left as they are.
    public var isActive: Bool { global != nil || settings.hasCORSRules }

    /// Whether the rules of some bucket could differ from the global ones (so a share link's
    /// bucket is worth looking up).
    public var hasBucketRules: Bool { settings.hasCORSRules }

    /// A CORS preflight: OPTIONS with `Origin` and `Access-Control-Request-Method`.
    public static func isPreflight(_ head: HTTPRequestHead) -> Bool {
        head.method == "OPTIONS" && head["Access-Control-Request-Method"] != nil && head["Origin"] != nil
    }

    /// The rules of a request on `bucket` (nil: on no bucket), and whether they are the bucket's.
    private func rules(bucket: String?) -> (rules: CORSConfiguration, isBucket: Bool)? {
        if let bucket, settings.hasCORSRules, let rules = settings.cors(of: bucket) { return (rules, true) }
        return global.map { ($0, false) }
    }

    /// The answer's headers to an allowed preflight; nil when no rule allows it (403).
    public func preflight(_ head: HTTPRequestHead, bucket: String?) -> [(name: String, value: String)]? {
        guard let origin = head["Origin"], let method = head["Access-Control-Request-Method"]?.trimmingOWS(),
              let (rules, isBucket) = rules(bucket: bucket) else { return nil }
        var requested: [String] = []
        for value in head.values(of: "Access-Control-Request-Headers") {
            for name in value.split(separator: ",") {
                let trimmed = name.trimmingOWS()
                if !trimmed.isEmpty { requested.append(String(trimmed).lowercased()) }
            }
        }
        guard requested.count <= 64, let (rule, pattern) = rules.match(origin: origin, method: String(method), headers: requested) else {
            return nil
        }
        var headers = allowOrigin(origin, pattern: pattern, isBucket: isBucket)
        headers.append(("Access-Control-Allow-Methods", rule.allowedMethods.joined(separator: ", ")))
        if !requested.isEmpty { headers.append(("Access-Control-Allow-Headers", requested.joined(separator: ", "))) }
        if let age = rule.maxAgeSeconds { headers.append(("Access-Control-Max-Age", String(age))) }
        headers.append(("Vary", "Origin, Access-Control-Request-Method, Access-Control-Request-Headers"))
        return headers
    }

    /// Adds to an actual answer `Vary: Origin` when a rule could apply, and the CORS headers
    /// when the request's origin and method match one.
    public func decorate(_ response: inout HTTPResponse, head: HTTPRequestHead, bucket: String?) {
        guard let (rules, isBucket) = rules(bucket: bucket) else { return }
        if let index = response.headers.firstIndex(where: { $0.name.caseInsensitiveEquals("Vary") }) {
            response.headers[index].value += ", Origin"
        } else {
            response.headers.append(("Vary", "Origin"))
        }
        guard let origin = head["Origin"], let (rule, pattern) = rules.match(origin: origin, method: head.method, headers: []) else {
            return
        }
        response.headers += allowOrigin(origin, pattern: pattern, isBucket: isBucket)
        let exposed = rule.exposeHeaders.isEmpty ? Self.exposedText : Self.exposedText + ", " + rule.exposeHeaders.joined(separator: ", ")
        response.headers.append(("Access-Control-Expose-Headers", exposed))
    }

    private func allowOrigin(_ origin: String, pattern: String, isBucket: Bool) -> [(name: String, value: String)] {
        let credentials = allowCredentials || (isBucket && pattern != "*")
        if pattern == "*" && !credentials { return [("Access-Control-Allow-Origin", "*")] }
        return [("Access-Control-Allow-Origin", origin), ("Access-Control-Allow-Credentials", "true")]
            .filter { credentials || $0.name != "Access-Control-Allow-Credentials" }
    }
}

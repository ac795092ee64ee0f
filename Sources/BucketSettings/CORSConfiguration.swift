import BlobCore
import Foundation

/// One CORS rule of a bucket, with S3's semantics: an origin pattern may hold one `*`, and so
/// may a header pattern; methods are GET, PUT, POST, DELETE and HEAD.
public struct CORSRule: Sendable, Equatable {
    public var id: String?
    public var allowedOrigins: [String]
    public var allowedMethods: [String]
    /// Header patterns, lowercased (header names match without regard to case).
    public var allowedHeaders: [String]
    public var exposeHeaders: [String]
    public var maxAgeSeconds: Int?

    public init(id: String? = nil, allowedOrigins: [String], allowedMethods: [String], allowedHeaders: [String] = [],
                exposeHeaders: [String] = [], maxAgeSeconds: Int? = nil) {
        self.id = id
        self.allowedOrigins = allowedOrigins
        self.allowedMethods = allowedMethods
        self.allowedHeaders = allowedHeaders.map { $0.lowercased() }
        self.exposeHeaders = exposeHeaders
        self.maxAgeSeconds = maxAgeSeconds
    }

    /// The first origin pattern that `origin` matches.
    func matchingOrigin(_ origin: String) -> String? {
        allowedOrigins.first { CORSConfiguration.wildcardMatch($0, origin) }
    }

    /// Whether every header name (lowercased) is allowed by some header pattern.
    func allows(headers: [String]) -> Bool {
        headers.allSatisfy { header in allowedHeaders.contains { CORSConfiguration.wildcardMatch($0, header) } }
    }
}

/// A bucket's CORS rules (at most 100), as `/v1/admin/buckets/B/cors` reads and writes them
/// and the catalog keeps them: `{"rules": [{"id", "allowed_origins", "allowed_methods",
/// "allowed_headers", "expose_headers", "max_age_seconds"}]}`. S3's XML is converted to it.
public struct CORSConfiguration: Sendable, Equatable {
    public var rules: [CORSRule]

    /// S3's limit on the rules of a bucket.
    public static let maximumRules = 100
    /// The methods a rule may allow, as S3 has them.
    public static let methods: Set<String> = ["GET", "PUT", "POST", "DELETE", "HEAD"]
    /// Largest accepted configuration, in bytes of JSON or XML (S3 allows 64 KB).
    public static let maximumSize = 64 * 1024

    /// Why a configuration is refused: `badMethod` is S3's InvalidRequest, the rest MalformedXML
    /// (S3) or a 400 problem (/v1).
    public enum Invalid: Error, Equatable, CustomStringConvertible {
        case malformed(String)
        case badMethod(String)
        case tooManyRules
        case badOrigin(String)

        public var description: String {
            switch self {
            case .malformed(let text): text
            case .badMethod(let method): "Found unsupported HTTP method in CORS config. Unsupported method is \(method)"
            case .tooManyRules: "A CORS configuration may hold at most \(CORSConfiguration.maximumRules) rules."
            case .badOrigin(let origin): "AllowedOrigin '\(origin)' can not have more than one wildcard."
            }
        }
    }

    /// Checks the rules: 1 to 100, each with an origin and a method S3 knows, one `*` at most
    /// in each origin and header pattern.
    public init(rules: [CORSRule]) throws(Invalid) {
        guard !rules.isEmpty else { throw .malformed("A CORS configuration needs at least one rule.") }
        guard rules.count <= Self.maximumRules else { throw .tooManyRules }
        for rule in rules {
            guard !rule.allowedOrigins.isEmpty, !rule.allowedMethods.isEmpty else {
                throw .malformed("Each CORS rule needs an allowed origin and an allowed method.")
            }
            if let method = rule.allowedMethods.first(where: { !Self.methods.contains($0) }) { throw .badMethod(method) }
            if let origin = rule.allowedOrigins.first(where: { $0.isEmpty || $0.filter { $0 == "*" }.count > 1 }) {
                throw .badOrigin(origin)
            }
            if let header = rule.allowedHeaders.first(where: { $0.isEmpty || $0.filter { $0 == "*" }.count > 1 }) {
                throw .malformed("AllowedHeader '\(header)' can not have more than one wildcard.")
            }
            if let age = rule.maxAgeSeconds, age < 0 { throw .malformed("MaxAgeSeconds must not be negative.") }
            if let id = rule.id, id.utf8.count > 255 { throw .malformed("A rule's ID is at most 255 characters.") }
        }
        self.rules = rules
    }

    /// Reads the JSON text the catalog keeps or an admin request sends.
    public init(jsonText: [UInt8]) throws(Invalid) {
        guard jsonText.count <= Self.maximumSize,
              let value = try? JSONSerialization.jsonObject(with: Data(jsonText), options: [.fragmentsAllowed]) else {
            throw .malformed("The body is not JSON (or is larger than 64 KiB).")
        }
        try self.init(json: value)
    }

    /// Reads the JSON value (as `JSONSerialization` gives it).
    public init(json: Any) throws(Invalid) {
        guard let object = json as? [String: Any], let list = object["rules"] as? [Any] else {
            throw .malformed("A CORS configuration is {\"rules\": [...]}.")
        }
        if let unknown = object.keys.first(where: { $0 != "rules" }) { throw .malformed("Unknown member '\(unknown)'.") }
        guard list.count <= Self.maximumRules else { throw .tooManyRules }
        var rules: [CORSRule] = []
        for item in list {
            guard let rule = item as? [String: Any] else { throw .malformed("Each rule is a JSON object.") }
            let known: Set<String> = ["id", "allowed_origins", "allowed_methods", "allowed_headers", "expose_headers", "max_age_seconds"]
            if let unknown = rule.keys.first(where: { !known.contains($0) }) { throw .malformed("Unknown rule member '\(unknown)'.") }
            func strings(_ name: String) throws(Invalid) -> [String] {
                guard let value = rule[name] else { return [] }
                guard let texts = value as? [String] else { throw .malformed("'\(name)' is a list of strings.") }
                return texts
            }
            var age: Int?
            if let value = rule["max_age_seconds"] {
                // A JSON true or false is an NSNumber too, of type "c".
                guard let number = value as? NSNumber, String(cString: number.objCType) != "c",
                      let whole = Int(exactly: number.doubleValue), whole >= 0, whole <= Int(Int32.max) else {
                    throw .malformed("'max_age_seconds' is a whole number of seconds.")
                }
                age = whole
            }
            if let id = rule["id"], !(id is String) { throw .malformed("'id' is a string.") }
            rules.append(CORSRule(id: rule["id"] as? String, allowedOrigins: try strings("allowed_origins"),
                                  allowedMethods: try strings("allowed_methods"), allowedHeaders: try strings("allowed_headers"),
                                  exposeHeaders: try strings("expose_headers"), maxAgeSeconds: age))
        }
        try self.init(rules: rules)
    }

    /// The canonical JSON: what the catalog keeps and the admin API answers.
    public var json: JSON {
        .object([("rules", .array(rules.map { rule in
            var members: [(String, JSON)] = []
            if let id = rule.id { members.append(("id", .string(id))) }
            members.append(("allowed_origins", .array(rule.allowedOrigins.map(JSON.string))))
            members.append(("allowed_methods", .array(rule.allowedMethods.map(JSON.string))))
            members.append(("allowed_headers", .array(rule.allowedHeaders.map(JSON.string))))
            members.append(("expose_headers", .array(rule.exposeHeaders.map(JSON.string))))
            if let age = rule.maxAgeSeconds { members.append(("max_age_seconds", .number(Int64(age)))) }
            return .object(members)
        }))])
    }

    /// The first rule, in order, whose origin, method and all of `headers` match (S3's choice),
    /// and the origin pattern it matched by.
    public func match(origin: String, method: String, headers: [String]) -> (rule: CORSRule, pattern: String)? {
        for rule in rules where rule.allowedMethods.contains(method) && rule.allows(headers: headers) {
            if let pattern = rule.matchingOrigin(origin) { return (rule, pattern) }
        }
        return nil
    }

    /// `pattern` with at most one `*` standing for any run of characters, against `text`.
    static func wildcardMatch(_ pattern: String, _ text: String) -> Bool {
        let p = pattern.utf8, t = text.utf8
        guard let star = p.firstIndex(of: UInt8(ascii: "*")) else { return p.elementsEqual(t) }
        let prefix = p[..<star], suffix = p[p.index(after: star)...]
        return t.count >= prefix.count + suffix.count && t.starts(with: prefix) && t.reversed().starts(with: suffix.reversed())
    }
}

extension CORSConfiguration {
    /// The methods the global flags (`--cors-origin`) allow.
    public static let globalMethods = ["GET", "HEAD", "PUT", "POST", "PATCH", "DELETE", "OPTIONS"]

    /// The one rule of the global flags: their origins, every method, any header, 10 minutes.
    public init(global origins: [String]) {
        rules = [CORSRule(id: "global", allowedOrigins: origins, allowedMethods: Self.globalMethods, allowedHeaders: ["*"],
                          maxAgeSeconds: 600)]
    }
}

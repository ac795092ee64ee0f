import BlobCore
import Foundation

/// A bucket policy of the common public shape, as the grants it gives to every caller (API
/// contract v1.2, S3 access settings): statements with Effect Allow, Principal `*` (or
/// {"AWS": "*"}), the actions s3:GetObject, s3:PutObject, s3:DeleteObject on
/// `arn:aws:s3:::B/PREFIX*` or an exact object, and s3:ListBucket on `arn:aws:s3:::B`
/// (optionally for the `s3:prefix` values of a StringLike or StringEquals condition). blobd's
/// `read` allows GET and listing together, so a ListBucket is accepted only where the policy's
/// s3:GetObject already covers every key the listing shows: it then adds nothing. Anything
/// else is refused, naming it, so that no setting is ever accepted and ignored.
public struct BucketPolicy: Sendable {
    /// What the policy gives every caller.
    public let grants: [Grant]

    /// Why a policy was refused.
    public enum ParseError: Error, Equatable, Sendable, CustomStringConvertible {
        /// Not a valid policy for this bucket (S3 MalformedPolicy, 400).
        case malformed(String)
        /// A valid policy element blobd does not keep (501 NotImplemented, naming it).
        case unsupported(String)

        public var description: String {
            switch self {
            case .malformed(let text), .unsupported(let text): text
            }
        }
    }

    /// S3's limit on a bucket policy's size.
    public static let maximumSize = 20 * 1024

    static let actions: [String: Grant.Action?] = [
        "s3:getobject": .read, "s3:putobject": .write, "s3:deleteobject": .delete, "s3:listbucket": nil,
    ]

    /// Parses and checks the policy of `bucket`.
    public init(parsing body: [UInt8], bucket: String) throws(ParseError) {
        guard body.count <= Self.maximumSize else { throw .malformed("Policies must be at most 20 KB.") }
        guard let root = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else {
            throw .malformed("The policy is not a JSON object.")
        }
        if let name = JSONDuplicates.firstDuplicate(in: body) {
            throw .malformed("The policy names \(name) twice in one object.")
        }
        for name in root.keys where !["Version", "Id", "Statement"].contains(name) {
            throw .malformed("Unknown field \(name).")
        }
        if let version = root["Version"] {
            guard let text = version as? String, ["2012-10-17", "2008-10-17"].contains(text) else {
                throw .malformed("The policy's Version must be 2012-10-17 or 2008-10-17.")
            }
        }
        let statements: [[String: Any]]
        if let one = root["Statement"] as? [String: Any] {
            statements = [one]
        } else if let list = root["Statement"] as? [Any], !list.isEmpty, let objects = list as? [[String: Any]] {
            statements = objects
        } else {
            throw .malformed("Missing required field Statement.")
        }
        var grants: [Grant] = []
        var listings: [String] = []
        for statement in statements {
            let parsed = try Statement(statement, bucket: bucket)
            grants += parsed.grants
            listings += parsed.listings
        }
        // A listing is accepted only where the policy's reads already hold every key it shows.
        for prefix in listings {
            let bytes = Array((bucket + "/" + prefix).utf8)
            guard grants.contains(where: { $0.action == .read && $0.pattern.coversEvery(startingWith: bytes) }) else {
                let scope = prefix.isEmpty ? "the whole bucket" : "prefix '\(prefix)'"
                throw .unsupported("s3:ListBucket on \(scope) without s3:GetObject on every key it lists "
                                   + "(blobd's read grant allows reading and listing together)")
            }
        }
        self.grants = grants
    }

    /// One statement: the grants it gives and the listing prefixes it allows.
    struct Statement {
        var grants: [Grant] = []
        var listings: [String] = []

        init(_ statement: [String: Any], bucket: String) throws(ParseError) {
            for name in statement.keys {
                if ["NotAction", "NotPrincipal", "NotResource"].contains(name) { throw .unsupported(name) }
                guard ["Sid", "Effect", "Principal", "Action", "Resource", "Condition"].contains(name) else {
                    throw .malformed("Unknown field \(name) in a statement.")
                }
            }
            switch statement["Effect"] as? String {
            case "Allow": break
            case "Deny": throw .unsupported("Effect Deny")
            default: throw .malformed("A statement's Effect must be Allow or Deny.")
            }
            try Self.checkPrincipal(statement["Principal"])
            let actions = try Self.strings(statement["Action"], "Action")
            let resources = try Self.strings(statement["Resource"], "Resource")
            let prefixes = try Self.listingPrefixes(statement["Condition"], actions: actions)
            for action in actions {
                guard let granted = BucketPolicy.actions[action.lowercased()] else { throw .unsupported("Action \(action)") }
                for resource in resources {
                    let path = try Self.path(resource, bucket: bucket)
                    if let granted {
                        guard let object = path else {
                            throw .malformed("Action \(action) does not apply to resource \(resource); name objects as \(resource)/*.")
                        }
                        grants.append(try Self.grant(granted, bucket: bucket, object: object, resource: resource))
                    } else {
                        guard path == nil else { throw .malformed("Action \(action) applies to the bucket (arn:aws:s3:::\(bucket)), not \(resource).") }
                        listings += prefixes
                    }
                }
            }
        }

        /// `*`, {"AWS": "*"} or {"AWS": ["*"]}: every caller.
        static func checkPrincipal(_ value: Any?) throws(ParseError) {
            guard let value else { throw .malformed("Missing required field Principal.") }
            if let text = value as? String, text == "*" { return }
            if let object = value as? [String: Any], object.count == 1, let aws = object["AWS"] {
                if let text = aws as? String, text == "*" { return }
                if let list = aws as? [String], list == ["*"] { return }
            }
            throw .unsupported("Principal \(BucketPolicy.compact(value)) (only \"*\" is supported)")
        }

        /// A string or a non-empty list of strings.
        static func strings(_ value: Any?, _ field: String) throws(ParseError) -> [String] {
            if let text = value as? String { return [text] }
            if let list = value as? [Any], !list.isEmpty, let texts = list as? [String] { return texts }
            throw .malformed("Missing or invalid field \(field).")
        }

        /// The object part of `arn:aws:s3:::BUCKET/OBJECT` (nil for the bucket itself).
        static func path(_ resource: String, bucket: String) throws(ParseError) -> String? {
            let arn = "arn:aws:s3:::"
            guard resource.hasPrefix(arn) else { throw .malformed("Policy has invalid resource \(resource).") }
            let rest = resource.dropFirst(arn.count)
            let parts = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts[0] == bucket else { throw .malformed("Policy has invalid resource \(resource) (not in bucket \(bucket)).") }
            return parts.count == 2 ? String(parts[1]) : nil
        }

        /// The grant of `action` on `BUCKET/OBJECT`: a prefix when it ends with `*`, else one key.
        static func grant(_ action: Grant.Action, bucket: String, object: String, resource: String) throws(ParseError) -> Grant {
            let wildcard = object.dropLast(object.hasSuffix("*") ? 1 : 0)
            if wildcard.contains("*") || wildcard.contains("?") {
                throw .unsupported("Resource \(resource) (a wildcard other than one '*' at the end)")
            }
            guard let grant = try? Grant(parsing: action.rawValue + ":" + bucket + "/" + object) else {
                throw .malformed("Policy has invalid resource \(resource).")
            }
            return grant
        }

        /// The listing prefixes a ListBucket statement allows: "" without a condition, else the
        /// `s3:prefix` values of one StringLike or StringEquals condition (StringLike: a literal,
        /// or one ending with `*`).
        static func listingPrefixes(_ value: Any?, actions: [String]) throws(ParseError) -> [String] {
            guard let value else { return [""] }
            guard actions.allSatisfy({ $0.lowercased() == "s3:listbucket" }) else {
                throw .unsupported("Condition on \(actions.joined(separator: ", ")) (only s3:prefix on s3:ListBucket)")
            }
            guard let condition = value as? [String: Any], condition.count == 1, let test = condition.first,
                  ["StringLike", "StringEquals"].contains(test.key), let keys = test.value as? [String: Any], keys.count == 1,
                  let values = keys.first, values.key.lowercased() == "s3:prefix" else {
                throw .unsupported("Condition \(BucketPolicy.compact(value)) (only StringLike or StringEquals on s3:prefix)")
            }
            let operation = test.key
            return try strings(values.value, "Condition").map { (text: String) throws(ParseError) -> String in
                guard operation == "StringLike" else { return text }
                let literal = text.hasSuffix("*") ? String(text.dropLast()) : text
                if literal.contains("*") || literal.contains("?") {
                    throw .unsupported("Condition StringLike s3:prefix '\(text)' (a wildcard other than one '*' at the end)")
                }
                return literal
            }
        }
    }

    /// Compact JSON text of a value, to name it in a refusal.
    static func compact(_ value: Any) -> String {
        if let text = value as? String { return "\"\(text)\"" }
        guard let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed, .withoutEscapingSlashes]) else { return "?" }
        return String(decoding: data, as: UTF8.self)
    }
}

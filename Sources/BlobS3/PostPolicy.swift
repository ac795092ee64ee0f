import BlobCore
import Foundation
import HTTPCore

/// The policy of a POST Object form (base64 JSON): when it expires, and the conditions every
/// form field must meet. Every field but the exempt ones must be named by a condition.
struct PostPolicy {
    enum Condition {
        /// `{"field": "value"}` or `["eq", "$field", "value"]`.
        case equals(field: String, value: String)
        /// `["starts-with", "$field", "prefix"]`.
        case startsWith(field: String, prefix: String)
        /// `["content-length-range", min, max]`.
        case lengthRange(min: UInt64, max: UInt64)
    }

    let expiration: Int64
    let conditions: [Condition]
    /// The condition's JSON text, for the error that names it.
    private let texts: [String]

    /// Fields no condition needs to name (AWS's list).
    static func isExempt(_ field: String) -> Bool {
        // `awsaccesskeyid` and `signature` sign a SigV2 form, as `x-amz-signature` a SigV4 one.
        ["x-amz-signature", "file", "policy", "awsaccesskeyid", "signature"].contains(field) || field.hasPrefix("x-ignore-")
    }

    static func denied(_ message: String) -> S3Error {
        S3Error(.accessDenied, "Invalid according to Policy: " + message)
    }

    /// Reads the base64 policy; AccessDenied/InvalidPolicyDocument-like errors for one S3 refuses.
    init(base64: String) throws(S3Error) {
        guard let data = Data(base64Encoded: base64.trimmingCharacters(in: .whitespacesAndNewlines)),
              let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw S3Error(.invalidArgument, "Invalid Policy: Invalid JSON.")
        }
        guard let text = object["expiration"] as? String, let expiration = Self.seconds(iso8601: text) else {
            throw S3Error(.invalidArgument, "Invalid Policy: Invalid 'expiration' value.")
        }
        guard let list = object["conditions"] as? [Any] else {
            throw S3Error(.invalidArgument, "Invalid Policy: Policy missing conditions.")
        }
        var conditions: [Condition] = [], texts: [String] = []
        for item in list.prefix(1000) {
            conditions.append(try Self.condition(item))
            let json = (try? JSONSerialization.data(withJSONObject: item, options: [.fragmentsAllowed, .withoutEscapingSlashes])) ?? Data()
            texts.append(String(decoding: json, as: UTF8.self))
        }
        self.expiration = expiration
        self.conditions = conditions
        self.texts = texts
    }

    private static func condition(_ item: Any) throws(S3Error) -> Condition {
        if let object = item as? [String: Any], object.count == 1, let (name, value) = object.first, let text = value as? String {
            return .equals(field: name.lowercased(), value: text)
        }
        guard let array = item as? [Any], array.count == 3, let kind = (array[0] as? String)?.lowercased() else {
            throw S3Error(.invalidArgument, "Invalid Policy: Invalid Condition.")
        }
        if kind == "content-length-range" {
            guard let low = number(array[1]), let high = number(array[2]), low <= high else {
                throw S3Error(.invalidArgument, "Invalid Policy: Invalid content-length-range.")
            }
            return .lengthRange(min: low, max: high)
        }
        guard let field = array[1] as? String, field.hasPrefix("$"), let value = array[2] as? String else {
            throw S3Error(.invalidArgument, "Invalid Policy: Invalid Condition.")
        }
        let name = String(field.dropFirst()).lowercased()
        switch kind {
        case "eq": return .equals(field: name, value: value)
        case "starts-with": return .startsWith(field: name, prefix: value)
        default: throw S3Error(.invalidArgument, "Invalid Policy: Invalid Condition: unknown operator \(kind).")
        }
    }

    private static func number(_ value: Any) -> UInt64? {
        if let text = value as? String { return UInt64(text) }
        guard let number = value as? NSNumber, String(cString: number.objCType) != "c" else { return nil }
        return UInt64(exactly: number.doubleValue)
    }

    /// `2026-11-27T12:00:00Z` or `2026-11-27T12:00:00.000Z`.
    static func seconds(iso8601 text: String) -> Int64? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return Int64(date.timeIntervalSince1970) }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text).map { Int64($0.timeIntervalSince1970) }
    }

    /// Checks the form's fields (names lowercased; `bucket` is the request's) against the
    /// conditions, and that every field is named by one. The size is checked as the file arrives.
    func check(_ fields: [String: String], now: Int64) throws(S3Error) {
        guard now < expiration else { throw Self.denied("Policy expired.") }
        var named = Set<String>()
        for (condition, text) in zip(conditions, texts) {
            switch condition {
            case .equals(let field, let value):
                named.insert(field)
                guard fields[field] == value else { throw Self.denied("Policy Condition failed: \(text)") }
            case .startsWith(let field, let prefix):
                named.insert(field)
                guard (fields[field] ?? "").hasPrefix(prefix) else { throw Self.denied("Policy Condition failed: \(text)") }
            case .lengthRange:
                break
            }
        }
        let extra = fields.keys.filter { !Self.isExempt($0) && !named.contains($0) && $0 != "bucket" }.sorted()
        if !extra.isEmpty { throw Self.denied("Extra input fields: \(extra.joined(separator: ", "))") }
    }

    /// The sizes every `content-length-range` of the policy allows (each must hold): at least
    /// `min` and at most `max`. Ranges that do not overlap leave `min` above `max`, which no
    /// size meets. Nil when the policy has none.
    var lengthRange: (min: UInt64, max: UInt64)? {
        var range: (min: UInt64, max: UInt64)?
        for case .lengthRange(let low, let high) in conditions {
            range = (max(low, range?.min ?? 0), min(high, range?.max ?? .max))
        }
        return range
    }
}

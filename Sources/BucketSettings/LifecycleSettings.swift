import BlobCore
import Foundation

/// A bucket's lifecycle rules as `/v1/admin/buckets/B/lifecycle`, the bootstrap file and the
/// catalog keep them (`{"rules": [{"id", "status", "prefix", "expiration_days",
/// "expiration_date", "abort_incomplete_multipart_upload_days", "noncurrent_days",
/// "expired_object_delete_marker"}]}`), and the checks every
/// dialect's form of them passes (S3's XML is read into `LifecycleRule`s first).
public enum LifecycleSettings {
    /// Why a configuration was refused: its shape (S3's MalformedXML), a value (InvalidArgument),
    /// or an element blobd does not keep (501 NotImplemented, naming it).
    public enum Invalid: Error, Equatable, CustomStringConvertible {
        case malformed(String)
        case invalid(String)
        case unsupported(String)

        public var description: String {
            switch self {
            case .malformed(let text), .invalid(let text): text
            case .unsupported(let element): "blobd's lifecycle rules do not support \(element)"
            }
        }
    }

    /// S3's limit on the rules of one configuration.
    public static let maximumRules = 1000

    /// Checks rules as S3 does: 1 to 1000, unique ids of at most 255 characters, a status, at
    /// least one action, positive days, Days and Date not both.
    public static func check(_ rules: [LifecycleRule]) throws(Invalid) {
        guard !rules.isEmpty else { throw .malformed("A lifecycle configuration needs at least one rule.") }
        guard rules.count <= maximumRules else { throw .invalid("A lifecycle configuration has at most \(maximumRules) rules.") }
        var ids = Set<String>()
        for rule in rules {
            guard !rule.id.isEmpty, rule.id.count <= 255 else { throw .invalid("A rule's ID is 1 to 255 characters.") }
            guard ids.insert(rule.id).inserted else { throw .invalid("Rule ID must be unique. Found same ID for more than one rule: \(rule.id)") }
            guard rule.prefix.utf8.count <= 1024 else { throw .invalid("A rule's prefix is at most 1024 bytes.") }
            try checkActions(rule)
        }
    }

    /// One rule's actions: Days, Date and ExpiredObjectDeleteMarker exclusive, days in range, one at least.
    private static func checkActions(_ rule: LifecycleRule) throws(Invalid) {
        if rule.expirationDays != nil && rule.expirationDate != nil {
            throw .malformed("Rule \(rule.id): Expiration takes Days or Date, not both.")
        }
        if rule.expiredObjectDeleteMarker && (rule.expirationDays != nil || rule.expirationDate != nil) {
            throw .malformed("Rule \(rule.id): ExpiredObjectDeleteMarker cannot be specified with Days or Date in a Lifecycle Expiration Policy.")
        }
        for (name, days) in [("Expiration Days", rule.expirationDays), ("AbortIncompleteMultipartUpload DaysAfterInitiation",
                                                                         rule.abortIncompleteDays),
                             ("NoncurrentVersionExpiration NoncurrentDays", rule.noncurrentDays)] {
            if let days, !(1...LifecycleRule.maximumDays).contains(days) {
                throw .invalid("'\(name)' must be a positive integer of at most \(LifecycleRule.maximumDays).")
            }
        }
        guard rule.expirationDays != nil || rule.expirationDate != nil || rule.abortIncompleteDays != nil || rule.noncurrentDays != nil
              || rule.expiredObjectDeleteMarker else {
            throw .invalid("Rule \(rule.id): at least one action needs to be specified in a rule.")
        }
    }

    /// The rules of the /v1 JSON (parsed by JSONSerialization), checked.
    public static func rules(fromJSON value: Any) throws(Invalid) -> [LifecycleRule] {
        guard let object = value as? [String: Any], let list = object["rules"] as? [Any] else {
            throw .malformed("A lifecycle configuration is {\"rules\": [RULE, ...]}.")
        }
        if let unknown = object.keys.first(where: { $0 != "rules" }) { throw .malformed("Unknown member '\(unknown)'.") }
        var rules: [LifecycleRule] = []
        for (index, entry) in list.enumerated() { rules.append(try rule(entry, number: index + 1)) }
        try check(rules)
        return rules
    }

    private static let members: Set<String> = ["id", "status", "prefix", "expiration_days", "expiration_date",
                                               "abort_incomplete_multipart_upload_days", "noncurrent_days",
                                               "expired_object_delete_marker"]

    /// S3 lifecycle features blobd does not keep, by their /v1 names: 501, not "unknown".
    private static let unsupportedMembers: Set<String> = ["transitions", "noncurrent_version_transitions", "newer_noncurrent_versions",
                                                          "tags", "object_size_greater_than", "object_size_less_than"]

    private static func rule(_ entry: Any, number: Int) throws(Invalid) -> LifecycleRule {
        guard let object = entry as? [String: Any] else { throw .malformed("Each rule is a JSON object.") }
        if let known = object.keys.sorted().first(where: { unsupportedMembers.contains($0) }) { throw .unsupported(known) }
        if let unknown = object.keys.sorted().first(where: { !members.contains($0) }) {
            throw .malformed("Rule \(number): unknown member '\(unknown)' (blobd keeps \(members.sorted().joined(separator: ", "))).")
        }
        let id = try text(object["id"], "id") ?? "rule-\(number)"
        let status = try text(object["status"], "status")
        guard status == "Enabled" || status == "Disabled" else { throw .malformed("Rule \(number): status is \"Enabled\" or \"Disabled\".") }
        return LifecycleRule(id: id, enabled: status == "Enabled", prefix: try text(object["prefix"], "prefix") ?? "",
                             expirationDays: try days(object["expiration_days"], "expiration_days"),
                             expirationDate: try text(object["expiration_date"], "expiration_date").map { text throws(Invalid) in try date(text) },
                             abortIncompleteDays: try days(object["abort_incomplete_multipart_upload_days"],
                                                           "abort_incomplete_multipart_upload_days"),
                             noncurrentDays: try days(object["noncurrent_days"], "noncurrent_days"),
                             expiredObjectDeleteMarker: try flag(object["expired_object_delete_marker"], "expired_object_delete_marker"))
    }

    /// A JSON true or false (absent or null: false).
    private static func flag(_ value: Any?, _ name: String) throws(Invalid) -> Bool {
        guard let value, !(value is NSNull) else { return false }
        guard let number = value as? NSNumber, String(cString: number.objCType) == "c" else { throw .malformed("'\(name)' is true or false.") }
        return number.boolValue
    }

    private static func text(_ value: Any?, _ name: String) throws(Invalid) -> String? {
        guard let value, !(value is NSNull) else { return nil }
        guard let text = value as? String else { throw .malformed("'\(name)' is a string.") }
        return text
    }

    /// A whole number of days (JSON numbers that are not integers, or booleans, are refused).
    private static func days(_ value: Any?, _ name: String) throws(Invalid) -> Int64? {
        guard let value, !(value is NSNull) else { return nil }
        // A JSON true or false is an NSNumber too, of type "c".
        guard let number = value as? NSNumber, String(cString: number.objCType) != "c",
              let days = Int64(exactly: number.doubleValue) else {
            throw .invalid("'\(name)' must be a positive integer.")
        }
        guard (1...LifecycleRule.maximumDays).contains(days) else {
            throw .invalid("'\(name)' must be a positive integer of at most \(LifecycleRule.maximumDays).")
        }
        return days
    }

    /// An ISO 8601 date at midnight UTC: `2027-01-01`, `2027-01-01T00:00:00Z`, with `.000` or `+00:00`.
    public static func date(_ text: String) throws(Invalid) -> Int64 {
        let bytes = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int64? {
            guard range.upperBound <= bytes.count, bytes[range].allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
            return Int64(String(decoding: bytes[range], as: UTF8.self))
        }
        guard bytes.count >= 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"), let year = number(0..<4),
              let month = number(5..<7), let day = number(8..<10), (1...12).contains(month), (1...31).contains(day) else {
            throw .invalid("'\(text)' is not an ISO 8601 date.")
        }
        let rest = String(decoding: bytes[10...], as: UTF8.self)
        let midnight = ["", "T00:00:00Z", "T00:00:00.000Z", "T00:00:00+00:00", "T00:00:00.000+00:00"]
        guard midnight.contains(rest) else {
            throw .invalid("Expiration Date must be midnight UTC (ISO 8601, like 2027-01-01T00:00:00.000Z), not '\(text)'.")
        }
        let seconds = HTTPDate.seconds(year: year, month: month, day: day, hour: 0, minute: 0, second: 0)
        guard HTTPDate.formatRFC3339(seconds).hasPrefix(String(decoding: bytes[0..<10], as: UTF8.self)) else {
            throw .invalid("'\(text)' is not a date of the calendar.")
        }
        return seconds
    }

    /// The /v1 JSON of rules (the text the catalog keeps).
    public static func json(_ rules: [LifecycleRule]) -> JSON {
        .object([("rules", .array(rules.map { rule in
            var members: [(String, JSON)] = [("id", .string(rule.id)), ("status", .string(rule.enabled ? "Enabled" : "Disabled")),
                                             ("prefix", .string(rule.prefix))]
            if let days = rule.expirationDays { members.append(("expiration_days", .number(days))) }
            if let date = rule.expirationDate { members.append(("expiration_date", .string(HTTPDate.formatRFC3339(date)))) }
            if let days = rule.abortIncompleteDays { members.append(("abort_incomplete_multipart_upload_days", .number(days))) }
            if let days = rule.noncurrentDays { members.append(("noncurrent_days", .number(days))) }
            if rule.expiredObjectDeleteMarker { members.append(("expired_object_delete_marker", .bool(true))) }
            return .object(members)
        }))])
    }

    /// The rules of a stored value (the catalog's text), checked again.
    public static func rules(stored text: String) throws(Invalid) -> [LifecycleRule] {
        guard let value = try? JSONSerialization.jsonObject(with: Data(text.utf8)) else { throw .malformed("not JSON") }
        return try rules(fromJSON: value)
    }

    /// Every bucket's rules among `settings`; unreadable ones are listed by bucket.
    public static func rules(of settings: [BucketAccessSetting]) -> (rules: LifecycleRules, unreadable: [String]) {
        var buckets: [String: [LifecycleRule]] = [:]
        var unreadable: [String] = []
        for setting in settings where setting.name == .lifecycle {
            do throws(Invalid) {
                buckets[setting.bucket] = try rules(stored: setting.value)
            } catch {
                unreadable.append(setting.bucket + " lifecycle")
            }
        }
        return (LifecycleRules(buckets), unreadable)
    }
}

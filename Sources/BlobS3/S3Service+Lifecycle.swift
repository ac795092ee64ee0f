import BlobStore
import HTTPCore
import MicroHTTPD

/// Put, Get and DeleteBucketLifecycleConfiguration: a bucket's rules, kept as the /v1 JSON
/// (`LifecycleSettings`) through the catalog's bucket settings, so that every node and dialect
/// expires by them. blobd keeps Expiration (Days, Date or ExpiredObjectDeleteMarker),
/// NoncurrentVersionExpiration (NoncurrentDays) and AbortIncompleteMultipartUpload, filtered by
/// prefix; any other element is refused with 501 naming it, and nothing is stored.
extension S3Service {
    /// The largest configuration body: 1000 rules of a few hundred bytes.
    static let maxLifecycleBody = 1 << 20

    /// PutBucketLifecycleConfiguration (and the older PutBucketLifecycle, the same body).
    func receivePutLifecycle(_ head: HTTPRequestHead, bucket: String, requestID: String) throws -> HTTPRequestAction {
        try requireBucket(bucket)
        let tooLarge = S3Error(.malformedXML, "The lifecycle configuration is larger than \(Self.maxLifecycleBody) bytes.")
        return try receiveSetting(head, bucket: bucket, limit: Self.maxLifecycleBody, tooLarge: tooLarge, requestID: requestID) {
            [self] body in
            let rules: [LifecycleRule]
            do throws(LifecycleSettings.Invalid) {
                rules = try Self.lifecycleRules(body)
                try LifecycleSettings.check(rules)
            } catch {
                switch error {
                case .malformed(let text): throw S3Error(.malformedXML, text)
                case .invalid(let text): throw S3Error(.invalidArgument, text)
                case .unsupported(let element):
                    throw S3Error(.notImplemented, "blobd's lifecycle rules do not support \(element); nothing was stored.")
                }
            }
            try setLifecycle(bucket, to: LifecycleSettings.json(rules).serialized())
            return HTTPResponse(status: 200, headers: [("x-amz-request-id", requestID)])
        }
    }

    /// GetBucketLifecycleConfiguration: the rules as XML; NoSuchLifecycleConfiguration without.
    func getLifecycle(bucket: String, requestID: String) throws -> HTTPResponse {
        try requireBucket(bucket)
        guard let stored = try accessSetting(bucket, .lifecycle), let rules = try? LifecycleSettings.rules(stored: stored) else {
            throw S3Error(.noSuchLifecycleConfiguration, "The lifecycle configuration does not exist")
        }
        return xmlResponse(XML.declaration + "<LifecycleConfiguration xmlns=\"\(XML.namespace)\">"
                           + rules.map(Self.ruleXML).joined() + "</LifecycleConfiguration>", requestID: requestID)
    }

    /// DeleteBucketLifecycle: 204, with or without rules.
    func deleteLifecycle(bucket: String, requestID: String) throws -> HTTPResponse {
        try requireBucket(bucket)
        try setLifecycle(bucket, to: nil)
        return HTTPResponse(status: 204, headers: [("x-amz-request-id", requestID)])
    }

    /// Stores (nil removes) the rules, puts them in force on this node at once, and stamps the
    /// bucket's objects with their new deadlines in the background.
    private func setLifecycle(_ bucket: String, to value: String?) throws {
        try setAccess(bucket, .lifecycle, to: value)
    }

    /// `x-amz-expiration` of an object a rule matches (GetObject, HeadObject, PutObject).
    func expirationHeaders(_ record: BlobRecord) -> [(name: String, value: String)] {
        guard let rule = store.expiration(of: record) else { return [] }
        return [LifecycleSettings.expirationHeader(deadline: rule.deadline, ruleID: rule.ruleID)]
    }

    private static func ruleXML(_ rule: LifecycleRule) -> String {
        var xml = "<Rule>" + XML.element("ID", rule.id) + "<Filter>" + XML.element("Prefix", rule.prefix) + "</Filter>"
            + XML.element("Status", rule.enabled ? "Enabled" : "Disabled")
        if let days = rule.expirationDays { xml += "<Expiration>" + XML.element("Days", String(days)) + "</Expiration>" }
        if let date = rule.expirationDate { xml += "<Expiration>" + XML.element("Date", isoDate(date)) + "</Expiration>" }
        if rule.expiredObjectDeleteMarker { xml += "<Expiration>" + XML.element("ExpiredObjectDeleteMarker", "true") + "</Expiration>" }
        if let days = rule.noncurrentDays {
            xml += "<NoncurrentVersionExpiration>" + XML.element("NoncurrentDays", String(days)) + "</NoncurrentVersionExpiration>"
        }
        if let days = rule.abortIncompleteDays {
            xml += "<AbortIncompleteMultipartUpload>" + XML.element("DaysAfterInitiation", String(days)) + "</AbortIncompleteMultipartUpload>"
        }
        return xml + "</Rule>"
    }

    /// The rules of a LifecycleConfiguration body (not yet checked as a whole).
    static func lifecycleRules(_ body: [UInt8]) throws(LifecycleSettings.Invalid) -> [LifecycleRule] {
        let root: XMLNode
        do {
            root = try XML.parse(body, maxChildren: LifecycleSettings.maximumRules + 1)
        } catch {
            throw .malformed("The XML you provided was not well-formed or did not validate against our published schema.")
        }
        guard root.name == "LifecycleConfiguration" else { throw .malformed("The root element must be LifecycleConfiguration.") }
        var rules: [LifecycleRule] = []
        for child in root.children {
            guard child.name == "Rule" else { throw .malformed("LifecycleConfiguration holds only Rule elements, not \(child.name).") }
            rules.append(try lifecycleRule(child, number: rules.count + 1))
        }
        return rules
    }

    /// The elements of a Rule blobd does not keep (501), and those it does.
    private static let unsupportedRuleElements: Set<String> = ["Transition", "Transitions", "NoncurrentVersionTransition",
                                                               "NoncurrentVersionTransitions"]

    private static func lifecycleRule(_ node: XMLNode, number: Int) throws(LifecycleSettings.Invalid) -> LifecycleRule {
        var rule = LifecycleRule(id: "rule-\(number)")
        var status: String?
        var prefix: String?
        for child in node.children {
            switch child.name {
            case "ID": rule.id = child.text.trimmingCharacters()
            case "Status": status = child.text.trimmingCharacters()
            case "Prefix":
                guard prefix == nil else { throw .malformed("A rule has one Prefix or one Filter.") }
                prefix = child.text
            case "Filter":
                guard prefix == nil else { throw .malformed("A rule has one Prefix or one Filter.") }
                prefix = try filterPrefix(child)
            case "Expiration": try expiration(child, into: &rule)
            case "NoncurrentVersionExpiration": try noncurrentExpiration(child, into: &rule)
            case "AbortIncompleteMultipartUpload":
                guard child.children.count == 1, let days = child.value("DaysAfterInitiation") else {
                    throw .malformed("AbortIncompleteMultipartUpload holds DaysAfterInitiation.")
                }
                rule.abortIncompleteDays = try positiveDays(days, "DaysAfterInitiation")
            case let name where unsupportedRuleElements.contains(name): throw .unsupported(name)
            default: throw .malformed("A Rule does not hold \(child.name).")
            }
        }
        guard let status, status == "Enabled" || status == "Disabled" else { throw .malformed("A rule's Status is Enabled or Disabled.") }
        guard let prefix else { throw .malformed("A rule needs a Filter (or the older Prefix).") }
        rule.enabled = status == "Enabled"
        rule.prefix = prefix
        return rule
    }

    /// The prefix of a Filter: empty, Prefix, or And holding one Prefix; tags and sizes are 501.
    private static func filterPrefix(_ filter: XMLNode) throws(LifecycleSettings.Invalid) -> String {
        guard filter.children.count <= 1 else { throw .malformed("A Filter holds one condition; use And for several.") }
        guard let condition = filter.children.first else { return "" }
        switch condition.name {
        case "Prefix": return condition.text
        case "And":
            var prefix: String?
            for part in condition.children {
                switch part.name {
                case "Prefix":
                    guard prefix == nil else { throw .malformed("And holds one Prefix.") }
                    prefix = part.text
                case "Tag", "ObjectSizeGreaterThan", "ObjectSizeLessThan": throw .unsupported("Filter And \(part.name)")
                default: throw .malformed("And does not hold \(part.name).")
                }
            }
            return prefix ?? ""
        case "Tag", "ObjectSizeGreaterThan", "ObjectSizeLessThan": throw .unsupported("Filter \(condition.name)")
        default: throw .malformed("A Filter does not hold \(condition.name).")
        }
    }

    /// Expiration: Days, Date, or ExpiredObjectDeleteMarker (one of them).
    private static func expiration(_ node: XMLNode, into rule: inout LifecycleRule) throws(LifecycleSettings.Invalid) {
        guard rule.expirationDays == nil && rule.expirationDate == nil && !rule.expiredObjectDeleteMarker else {
            throw .malformed("A rule has one Expiration.")
        }
        var marker: Bool?
        for child in node.children {
            switch child.name {
            case "Days": rule.expirationDays = try positiveDays(child.text, "Days")
            case "Date": rule.expirationDate = try LifecycleSettings.date(child.text.trimmingCharacters())
            case "ExpiredObjectDeleteMarker":
                switch child.text.trimmingCharacters() {
                case "true": marker = true
                case "false": marker = false
                default: throw .malformed("ExpiredObjectDeleteMarker is true or false.")
                }
            default: throw .malformed("Expiration does not hold \(child.name).")
            }
        }
        rule.expiredObjectDeleteMarker = marker ?? false
        let given = [rule.expirationDays != nil, rule.expirationDate != nil, marker != nil].filter { $0 }.count
        guard given == 1 else {
            throw .malformed(marker != nil && given > 1 ? "ExpiredObjectDeleteMarker cannot be specified with Days or Date in a Lifecycle Expiration Policy."
                                                        : "Expiration holds Days, Date or ExpiredObjectDeleteMarker (one of them).")
        }
    }

    /// NoncurrentVersionExpiration: NoncurrentDays. NewerNoncurrentVersions (keeping that many
    /// newer noncurrent versions) is not supported: 501 naming it.
    private static func noncurrentExpiration(_ node: XMLNode, into rule: inout LifecycleRule) throws(LifecycleSettings.Invalid) {
        guard rule.noncurrentDays == nil else { throw .malformed("A rule has one NoncurrentVersionExpiration.") }
        for child in node.children {
            switch child.name {
            case "NoncurrentDays": rule.noncurrentDays = try positiveDays(child.text, "NoncurrentDays")
            case "NewerNoncurrentVersions": throw .unsupported("NoncurrentVersionExpiration NewerNoncurrentVersions")
            default: throw .malformed("NoncurrentVersionExpiration does not hold \(child.name).")
            }
        }
        guard rule.noncurrentDays != nil else { throw .malformed("NoncurrentVersionExpiration holds NoncurrentDays.") }
    }

    private static func positiveDays(_ text: String, _ name: String) throws(LifecycleSettings.Invalid) -> Int64 {
        let trimmed = text.trimmingCharacters()
        guard !trimmed.isEmpty, trimmed.utf8.count <= 12, trimmed.utf8.allSatisfy({ (0x30...0x39).contains($0) || $0 == 0x2D }),
              let days = Int64(trimmed) else {
            throw .malformed("'\(name)' is an integer.")
        }
        guard (1...LifecycleRule.maximumDays).contains(days) else {
            let action = ["Days": "Expiration", "NoncurrentDays": "NoncurrentVersionExpiration"][name] ?? "AbortIncompleteMultipartUpload"
            throw .invalid("'\(name)' for \(action) action must be a positive integer.")
        }
        return days
    }
}

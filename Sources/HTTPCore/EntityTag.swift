/// An entity tag (RFC 9110 §8.8.3): `"opaque"` or `W/"opaque"`.
public struct EntityTag: Equatable, Sendable {
    /// True for a weak tag.
    public let weak: Bool
    /// The characters between the quotes.
    public let opaque: String

    /// Creates a tag.
    public init(weak: Bool = false, opaque: String) {
        self.weak = weak
        self.opaque = opaque
    }

    /// The strong tag of a blob version.
    public init(version: String) {
        self.init(opaque: version)
    }

    /// The header form, quotes included.
    public var headerValue: String { (weak ? "W/" : "") + "\"\(opaque)\"" }

    /// Strong comparison: both strong and identical.
    public func strongMatches(_ other: EntityTag) -> Bool {
        !weak && !other.weak && opaque == other.opaque
    }

    /// Weak comparison: identical opaque parts.
    public func weakMatches(_ other: EntityTag) -> Bool {
        opaque == other.opaque
    }

    /// Parses one tag; nil if malformed.
    public static func parse(_ text: Substring) -> EntityTag? {
        var rest = text
        var weak = false
        if rest.hasPrefix("W/") {
            weak = true
            rest = rest.dropFirst(2)
        }
        guard rest.count >= 2, rest.first == "\"", rest.last == "\"" else { return nil }
        let opaque = rest.dropFirst().dropLast()
        // etagc = %x21 / %x23-7E / obs-text
        guard opaque.unicodeScalars.allSatisfy({ $0.value == 0x21 || (0x23...0x7E).contains($0.value) || $0.value >= 0x80 }) else {
            return nil
        }
        return EntityTag(weak: weak, opaque: String(opaque))
    }
}

/// The value of If-Match or If-None-Match: `*` or a list of tags.
public enum EntityTagCondition: Equatable, Sendable {
    /// `*`: any current representation.
    case any
    /// A list of tags; malformed members are dropped.
    case tags([EntityTag])

    /// Parses the combined field values; nil when absent. `acceptingUnquoted`: a member without
    /// its quotes counts as that strong tag (S3 clients send ETags so, and S3 takes them).
    public static func parse(_ values: [String], acceptingUnquoted: Bool = false) -> EntityTagCondition? {
        guard !values.isEmpty else { return nil }
        var tags: [EntityTag] = []
        for value in values {
            for member in value.split(separator: ",") {
                let trimmed = member.trimmingOWS()
                if trimmed == "*" { return .any }
                if let tag = EntityTag.parse(trimmed) ?? (acceptingUnquoted ? EntityTag.parse("\"\(trimmed)\""[...]) : nil) {
                    tags.append(tag)
                }
            }
        }
        return .tags(tags)
    }
}

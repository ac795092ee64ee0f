import BlobStore
import MicroHTTPD

/// The conditional headers of a request (RFC 9110 §13), evaluated in the order of §13.2.2.
public struct Preconditions: Sendable {
    /// If-Match.
    public var ifMatch: EntityTagCondition?
    /// If-None-Match.
    public var ifNoneMatch: EntityTagCondition?
    /// If-Modified-Since, when a valid HTTP-date (an invalid date is ignored, as §13.1.3 says).
    public var ifModifiedSince: Int64?
    /// If-Unmodified-Since, when a valid HTTP-date.
    public var ifUnmodifiedSince: Int64?

    /// What the evaluation says to do.
    public enum Outcome: Equatable, Sendable {
        /// Go on with the request.
        case proceed
        /// Answer 304 Not Modified (GET and HEAD only).
        case notModified
        /// Answer 412 Precondition Failed.
        case failed
    }

    /// Reads the conditional headers of `head`; `acceptingUnquotedTags` as in
    /// `EntityTagCondition.parse` (the S3 dialect).
    public init(_ head: HTTPRequestHead, acceptingUnquotedTags: Bool = false) {
        ifMatch = EntityTagCondition.parse(head.values(of: "If-Match"), acceptingUnquoted: acceptingUnquotedTags)
        ifNoneMatch = EntityTagCondition.parse(head.values(of: "If-None-Match"), acceptingUnquoted: acceptingUnquotedTags)
        ifModifiedSince = head["If-Modified-Since"].flatMap(HTTPDate.parse)
        ifUnmodifiedSince = head["If-Unmodified-Since"].flatMap(HTTPDate.parse)
    }

    /// Creates preconditions directly (tests).
    public init(ifMatch: EntityTagCondition? = nil, ifNoneMatch: EntityTagCondition? = nil,
                ifModifiedSince: Int64? = nil, ifUnmodifiedSince: Int64? = nil) {
        self.ifMatch = ifMatch
        self.ifNoneMatch = ifNoneMatch
        self.ifModifiedSince = ifModifiedSince
        self.ifUnmodifiedSince = ifUnmodifiedSince
    }

    /// True when the request carries no condition at all.
    public var isEmpty: Bool {
        ifMatch == nil && ifNoneMatch == nil && ifModifiedSince == nil && ifUnmodifiedSince == nil
    }

    /// The condition these headers put on a write, which the catalog evaluates inside its
    /// transaction (If-Modified-Since has no say on a write); `scheme`: how a record's entity
    /// tag is made (the version on /v1, the content's digest on S3).
    public func writeCondition(_ scheme: WriteCondition.TagScheme = .version) -> WriteCondition {
        WriteCondition(ifMatch: ifMatch.map(Self.tagList), ifNoneMatch: ifNoneMatch.map(Self.tagList),
                       ifUnmodifiedSince: ifUnmodifiedSince, scheme: scheme)
    }

    private static func tagList(_ condition: EntityTagCondition) -> WriteCondition.TagList {
        switch condition {
        case .any: .any
        case .tags(let tags): .tags(tags.map { WriteCondition.Tag($0.opaque, weak: $0.weak) })
        }
    }

    /// Evaluates against the current version (nil when there is none). `safe` is true for GET
    /// and HEAD, where a failed If-None-Match means 304 rather than 412.
    public func evaluate(current: BlobRecord?, safe: Bool,
                         entityTag: (BlobRecord) -> EntityTag = { EntityTag(version: $0.version) }) -> Outcome {
        let tag = current.map(entityTag)
        // 1. If-Match: true if some listed tag strongly matches (or `*` and a version exists).
        if let ifMatch {
            switch ifMatch {
            case .any: if tag == nil { return .failed }
            case .tags(let tags): if !tags.contains(where: { tag?.strongMatches($0) ?? false }) { return .failed }
            }
        } else if let ifUnmodifiedSince, let current, current.modified > ifUnmodifiedSince {
            // 2. If-Unmodified-Since, only without If-Match.
            return .failed
        }
        // 3. If-None-Match: false if some listed tag weakly matches (or `*` and a version exists).
        if let ifNoneMatch {
            let matched: Bool
            switch ifNoneMatch {
            case .any: matched = tag != nil
            case .tags(let tags): matched = tags.contains { tag?.weakMatches($0) ?? false }
            }
            if matched { return safe ? .notModified : .failed }
        } else if safe, let ifModifiedSince, let current, current.modified <= ifModifiedSince {
            // 4. If-Modified-Since, only for GET/HEAD and without If-None-Match.
            return .notModified
        }
        return .proceed
    }
}

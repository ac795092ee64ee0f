/// What a write (a commit or a removal) requires of the record it replaces, as data: the
/// catalog evaluates it inside its transaction with `holds(for:)`, the one evaluator every
/// backend calls; a test can compare and print it; a commit request carrying it stays Sendable.
///
/// It holds the conditional headers that have a say on a write (RFC 9110 §13.2.2, steps 1 to 3):
/// If-Match, If-Unmodified-Since and If-None-Match. Create-only is `If-None-Match: *`, and a
/// removal of exactly one version is `If-Match` of that version.
public struct WriteCondition: Sendable, Equatable, CustomStringConvertible {
    /// If-Match: a record must exist and (for a tag list) strongly match one tag.
    public var ifMatch: TagList?
    /// If-None-Match: no record may exist (`*`) or weakly match a listed tag.
    public var ifNoneMatch: TagList?
    /// If-Unmodified-Since, seconds since the epoch; ignored when `ifMatch` is set.
    public var ifUnmodifiedSince: Int64?
    /// How a record's entity tag is made, to compare with the listed tags.
    public var scheme: TagScheme
    /// The caller's grant allows creating only (`create`, not `write`): a record in place
    /// refuses the write with `.createOnly`, whatever the headers say.
    public var onlyCreate = false
    /// S3's `x-amz-if-match-last-modified-time`: a record must exist, modified at exactly this
    /// second (since the epoch).
    public var ifModifiedAt: Int64?
    /// S3's `x-amz-if-match-size`: a record must exist, of exactly this many bytes.
    public var ifSize: UInt64?
    /// The bucket's versioning when the write was decided: not a requirement but what becomes
    /// of the record replaced (kept as a noncurrent version when enabled, and when suspended
    /// unless it is the `null` version). The HTTP layer sets it from the bucket's setting.
    public var versioning: BucketVersioning = .unversioned
    /// `x-amz-bypass-governance-retention` from a caller with `admin` on the bucket: a removal
    /// (or a retention change) may go past a GOVERNANCE retention, never a COMPLIANCE one or a
    /// legal hold.
    public var bypassGovernance = false
    /// The Object Lock the new version asks for (S3's `x-amz-object-lock-*` on PutObject): its
    /// retention (when it has a mode) replaces the bucket's default, its legal hold is set when
    /// on. Nil: the bucket's default alone. Not a requirement, like `versioning`.
    public var newLock: ObjectLock?
    /// The NoncurrentDays of the lifecycle rule that matches the key, if any: a version this
    /// write makes noncurrent is stamped to be found by the sweep that many days on (rounded up
    /// to midnight UTC). Not a requirement, like `versioning`.
    public var noncurrentDays: Int64?

    /// `*`, or a list of entity tags (an empty list matches nothing).
    public enum TagList: Sendable, Equatable {
        case any
        case tags([Tag])
    }

    /// One entity tag of If-Match or If-None-Match.
    public struct Tag: Sendable, Equatable {
        /// The characters between the quotes.
        public var opaque: String
        /// True for `W/"…"`.
        public var weak: Bool

        public init(_ opaque: String, weak: Bool = false) {
            self.opaque = opaque
            self.weak = weak
        }
    }

    /// How a record's (always strong) entity tag is made.
    public enum TagScheme: Sendable, Equatable {
        /// The version: /v1's ETag.
        case version
        /// The content's MD5 (with `-PARTS` for a multipart object), else its SHA-256 in hex:
        /// the ETag S3 clients see.
        case content

        /// The opaque part of `record`'s entity tag.
        public func tag(of record: BlobRecord) -> String {
            switch self {
            case .version: return record.version
            case .content:
                if let parts = record.parts, let md5 = record.md5 { return "\(hex(md5))-\(parts)" }
                return hex(record.md5 ?? record.sha256)
            }
        }
    }

    public init(ifMatch: TagList? = nil, ifNoneMatch: TagList? = nil, ifUnmodifiedSince: Int64? = nil,
                scheme: TagScheme = .version, ifModifiedAt: Int64? = nil, ifSize: UInt64? = nil) {
        self.ifMatch = ifMatch
        self.ifNoneMatch = ifNoneMatch
        self.ifUnmodifiedSince = ifUnmodifiedSince
        self.scheme = scheme
        self.ifModifiedAt = ifModifiedAt
        self.ifSize = ifSize
    }

    /// No condition: the write goes ahead whatever the key holds.
    public static let always = WriteCondition()
    /// Only if the key holds nothing (`If-None-Match: *`).
    public static let createOnly = WriteCondition(ifNoneMatch: .any)

    /// Only while the key holds exactly `version`.
    public static func version(_ version: String) -> WriteCondition {
        WriteCondition(ifMatch: .tags([Tag(version)]))
    }

    /// Why the write may not replace `current` (nil when the key holds nothing):
    /// `.preconditionFailed` when the headers do not hold, `.createOnly` when the caller may only
    /// create and a record is there; nil when the write goes ahead. Every catalog calls this.
    public func failure(for current: BlobRecord?) -> StoreError? {
        // The client's own conditions answer first: a write they stop would replace nothing.
        if !holds(for: current) { return .preconditionFailed }
        return onlyCreate && current != nil ? .createOnly : nil
    }

    /// When a version this write makes noncurrent at `now` expires (`noncurrentDays`); nil if never.
    public func noncurrentDeadline(at now: Int64) -> Int64? {
        noncurrentDays.map { LifecycleRule.nextMidnight(now + $0 * 86_400) }
    }

    /// Why the write may not remove `version` (make its file garbage) at `now`: its Object Lock
    /// (`.objectLocked`), or nil.
    public func lockFailure(removing version: BlobRecord, at now: Int64) -> StoreError? {
        version.lock.removalFailure(at: now, bypassingGovernance: bypassGovernance)
    }

    /// True when the write may replace `current` (nil when the key holds nothing), in the order
    /// of RFC 9110 §13.2.2: If-Match, else If-Unmodified-Since; then If-None-Match.
    public func holds(for current: BlobRecord?) -> Bool {
        let tag = current.map(scheme.tag(of:))
        if let ifMatch {
            switch ifMatch {
            case .any: if tag == nil { return false }
            // Strong comparison: the record's tag is strong, so the listed one must be too.
            case .tags(let tags): if !tags.contains(where: { !$0.weak && $0.opaque == tag }) { return false }
            }
        } else if let ifUnmodifiedSince, let current, current.modified > ifUnmodifiedSince {
            return false
        }
        if let ifModifiedAt, current?.modified != ifModifiedAt { return false }
        if let ifSize, current?.size != ifSize { return false }
        if let ifNoneMatch {
            switch ifNoneMatch {
            case .any: if tag != nil { return false }
            // Weak comparison: the opaque parts alone.
            case .tags(let tags): if tags.contains(where: { $0.opaque == tag }) { return false }
            }
        }
        return true
    }

    public var description: String {
        var parts: [String] = []
        if let ifMatch { parts.append("If-Match: \(Self.text(ifMatch))") }
        if let ifUnmodifiedSince { parts.append("If-Unmodified-Since: \(ifUnmodifiedSince)") }
        if let ifNoneMatch { parts.append("If-None-Match: \(Self.text(ifNoneMatch))") }
        if let ifModifiedAt { parts.append("modified at \(ifModifiedAt)") }
        if let ifSize { parts.append("size \(ifSize)") }
        if onlyCreate { parts.append("create only (grant)") }
        if versioning != .unversioned { parts.append("versioning \(versioning.rawValue)") }
        if bypassGovernance { parts.append("bypassing governance") }
        guard !parts.isEmpty else { return "always" }
        return parts.joined(separator: ", ") + (scheme == .content ? " (content tags)" : "")
    }

    private static func text(_ list: TagList) -> String {
        switch list {
        case .any: "*"
        case .tags(let tags): tags.map { ($0.weak ? "W/" : "") + "\"\($0.opaque)\"" }.joined(separator: ", ")
        }
    }
}

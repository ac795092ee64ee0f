/// How long a blob lives: a per-blob time to live (`?ttl=` on a /v1 PUT, `ttl` in tus metadata),
/// and a bucket's lifecycle rules (S3's Expiration Days or Date, AbortIncompleteMultipartUpload).
public enum ExpiryDuration {
    /// The longest time to live blobd takes: 100 years, far from any overflow of a deadline.
    public static let maximum: Int64 = 100 * 365 * 86_400

    /// Seconds of a duration: digits, optionally followed by `s`, `m`, `h` or `d`; at least 1 s
    /// and at most `maximum`. Nil for anything else (an empty text, a sign, a fraction, too many
    /// digits): never traps, whatever the text.
    public static func parse(_ text: String) -> Int64? {
        var digits = Substring(text)
        var unit: Int64 = 1
        if let last = digits.last, !last.isNumber {
            switch last {
            case "s": unit = 1
            case "m": unit = 60
            case "h": unit = 3_600
            case "d": unit = 86_400
            default: return nil
            }
            digits = digits.dropLast()
        }
        // 12 digits at most: 10^12 times a day still fits in 64 bits before the bound is checked.
        guard !digits.isEmpty, digits.utf8.count <= 12, digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
              let value = Int64(digits) else { return nil }
        let (seconds, overflow) = value.multipliedReportingOverflow(by: unit)
        guard !overflow, seconds >= 1, seconds <= maximum else { return nil }
        return seconds
    }
}

/// One lifecycle rule of a bucket, as `/v1/admin/buckets/B/lifecycle` and S3's
/// LifecycleConfiguration give it (the parts blobd keeps).
public struct LifecycleRule: Sendable, Equatable {
    /// The rule's id (at most 255 characters), named in `x-amz-expiration`.
    public var id: String
    /// Status Enabled; a Disabled rule is kept but does nothing.
    public var enabled: Bool
    /// The keys inside the bucket it applies to ("" for all).
    public var prefix: String
    /// Expiration Days: creation time plus this many days, rounded up to the next midnight UTC.
    public var expirationDays: Int64?
    /// Expiration Date: midnight UTC, seconds since the epoch.
    public var expirationDate: Int64?
    /// AbortIncompleteMultipartUpload DaysAfterInitiation.
    public var abortIncompleteDays: Int64?
    /// NoncurrentVersionExpiration NoncurrentDays: a version in a versioned bucket is removed
    /// this many days after it stopped being current, rounded up to the next midnight UTC.
    public var noncurrentDays: Int64?
    /// Expiration ExpiredObjectDeleteMarker: a delete marker that is its key's only version left
    /// is removed.
    public var expiredObjectDeleteMarker: Bool

    public init(id: String, enabled: Bool = true, prefix: String = "", expirationDays: Int64? = nil, expirationDate: Int64? = nil,
                abortIncompleteDays: Int64? = nil, noncurrentDays: Int64? = nil, expiredObjectDeleteMarker: Bool = false) {
        self.noncurrentDays = noncurrentDays
        self.expiredObjectDeleteMarker = expiredObjectDeleteMarker
        self.id = id
        self.enabled = enabled
        self.prefix = prefix
        self.expirationDays = expirationDays
        self.expirationDate = expirationDate
        self.abortIncompleteDays = abortIncompleteDays
    }

    /// The most days a rule may give (S3 takes any positive integer; this keeps deadlines far
    /// from overflow): 100 years.
    public static let maximumDays: Int64 = ExpiryDuration.maximum / 86_400

    /// When an object created at `created` expires under this rule, if it does: S3's rule,
    /// creation time plus Days rounded up to the next midnight UTC, or the Date.
    public func deadline(created: Int64) -> Int64? {
        if let expirationDate { return expirationDate }
        guard let days = expirationDays else { return nil }
        return Self.nextMidnight(created + days * 86_400)
    }

    /// `time` rounded up to a midnight UTC (a midnight stays).
    public static func nextMidnight(_ time: Int64) -> Int64 {
        let day: Int64 = 86_400
        let floor = time >= 0 ? time / day * day : (time - day + 1) / day * day
        return floor == time ? time : floor + day
    }
}

/// The lifecycle rules of every bucket, as this node last read them from the catalog.
public struct LifecycleRules: Sendable, Equatable {
    /// Rules by bucket name.
    public var buckets: [String: [LifecycleRule]]

    public init(_ buckets: [String: [LifecycleRule]] = [:]) {
        self.buckets = buckets
    }

    /// True when no bucket has a rule: the reads skip every lookup then.
    public var isEmpty: Bool { buckets.isEmpty }

    /// The bucket of a blob key (its first segment) and the key inside it.
    public static func split(_ key: BlobKey) -> (bucket: Substring, key: Substring)? {
        let raw = key.rawValue
        guard let slash = raw.firstIndex(of: "/") else { return nil }
        return (raw[..<slash], raw[raw.index(after: slash)...])
    }

    /// The enabled rules of `key`'s bucket whose prefix it starts with.
    private func matching(_ key: BlobKey) -> [LifecycleRule] {
        guard !buckets.isEmpty, let (bucket, inside) = Self.split(key), let rules = buckets[String(bucket)] else { return [] }
        return rules.filter { $0.enabled && inside.hasPrefix($0.prefix) }
    }

    /// The earliest expiration of a blob created at `created` among the rules that match it, with
    /// the rule's id (S3 applies the earliest of several).
    public func expiration(of key: BlobKey, created: Int64) -> (deadline: Int64, ruleID: String)? {
        var best: (deadline: Int64, ruleID: String)?
        for rule in matching(key) {
            guard let deadline = rule.deadline(created: created) else { continue }
            if best == nil || deadline < best?.deadline ?? .max { best = (deadline, rule.id) }
        }
        return best
    }

    /// The fewest NoncurrentDays among the rules that match `key`; nil when none has any.
    public func noncurrentDays(of key: BlobKey) -> Int64? {
        isEmpty ? nil : matching(key).compactMap(\.noncurrentDays).min()
    }

    /// When a version of `key` that stopped being current at `since` is removed by a
    /// NoncurrentVersionExpiration rule (S3: NoncurrentDays later, rounded up to midnight UTC).
    public func noncurrentDeadline(of key: BlobKey, since: Int64) -> Int64? {
        noncurrentDays(of: key).map { LifecycleRule.nextMidnight(since + $0 * 86_400) }
    }

    /// True when a rule that matches `key` removes expired object delete markers.
    public func removesExpiredDeleteMarkers(of key: BlobKey) -> Bool {
        !isEmpty && matching(key).contains(where: \.expiredObjectDeleteMarker)
    }

    /// When an unfinished multipart upload of `key` started at `initiated` is aborted by an
    /// AbortIncompleteMultipartUpload rule, if one matches.
    public func abortDeadline(of key: BlobKey, initiated: Int64) -> Int64? {
        matching(key).compactMap { rule in rule.abortIncompleteDays.map { initiated + $0 * 86_400 } }.min()
    }

    /// When `record` stops being readable: the earlier of its own time to live and its rules'
    /// expiration; nil if never.
    public func deadline(of record: BlobRecord) -> Int64? {
        let rule = isEmpty ? nil : expiration(of: record.key, created: record.modified)?.deadline
        switch (record.ttlExpires, rule) {
        case (let ttl?, let rule?): return min(ttl, rule)
        case (let ttl?, nil): return ttl
        case (nil, let rule): return rule
        }
    }
}

/// What a credential may do, on which keys: `ACTION[:PATTERN]` (API contract v1.2, Grants).
/// Grants are data: the tokens file, the catalog's keys, bootstrap files and share links all
/// hold them, and `Grants` evaluates them, in one place, for every dialect.
public struct Grant: Hashable, Sendable, CustomStringConvertible {
    /// What a grant allows.
    public enum Action: String, Sendable, CaseIterable {
        /// GET and HEAD of a blob, and listings inside the pattern.
        case read
        /// Create or replace a blob.
        case write
        /// Create a blob where none is; replacing one is refused inside the commit.
        case create
        /// Delete a blob.
        case delete
        /// Make share links.
        case share
        /// Bucket settings; `admin:*` also manages keys.
        case admin
    }

    /// The keys a grant covers. A bucket is a key's first segment, in /v1 as in S3.
    public enum Pattern: Hashable, Sendable, CustomStringConvertible {
        /// Every key and every bucket: `*`.
        case everything
        /// Every key `BUCKET/...`: `BUCKET`.
        case bucket(String)
        /// Every key starting with these bytes (`BUCKET/` and a prefix): `BUCKET/PREFIX*`.
        case prefix([UInt8])
        /// Exactly this key: `BUCKET/KEY`.
        case key([UInt8])

        public var description: String {
            switch self {
            case .everything: "*"
            case .bucket(let name): name
            case .prefix(let bytes): String(decoding: bytes, as: UTF8.self) + "*"
            case .key(let bytes): String(decoding: bytes, as: UTF8.self)
            }
        }
    }

    public let action: Action
    public let pattern: Pattern

    public init(_ action: Action, _ pattern: Pattern = .everything) {
        self.action = action
        self.pattern = pattern
    }

    /// Why a grant's text was refused.
    public struct ParseError: Error, Equatable, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// Parses `ACTION[:PATTERN]`. A pattern is `*`, `BUCKET`, `BUCKET/PREFIX*` or `BUCKET/KEY`;
    /// a `*` anywhere but at the end, an empty bucket, or a key that breaks the key rules is refused.
    public init(parsing text: some StringProtocol) throws(ParseError) {
        let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard let action = Action(rawValue: String(parts[0])) else {
            throw ParseError(description: "unknown action '\(parts[0])' in grant '\(text)' (use read, write, create, delete, share or admin)")
        }
        self.action = action
        self.pattern = parts.count == 2 ? try Self.pattern(String(parts[1]), in: String(text)) : .everything
    }

    private static func pattern(_ text: String, in grant: String) throws(ParseError) -> Pattern {
        if text == "*" { return .everything }
        var bytes = Array(text.utf8)
        let isPrefix = bytes.last == UInt8(ascii: "*")
        if isPrefix { bytes.removeLast() }
        guard !bytes.contains(UInt8(ascii: "*")) else {
            throw ParseError(description: "grant '\(grant)': '*' may only end a pattern")
        }
        guard let slash = bytes.firstIndex(of: UInt8(ascii: "/")) else {
            guard !isPrefix, !bytes.isEmpty, (try? BlobKey(validating: bytes)) != nil else {
                throw ParseError(description: "grant '\(grant)': a pattern is *, BUCKET, BUCKET/PREFIX* or BUCKET/KEY")
            }
            return .bucket(text)
        }
        guard slash > 0 else { throw ParseError(description: "grant '\(grant)': the pattern names no bucket") }
        if isPrefix {
            // The prefix of a valid key: checked with a stand-in last byte, since it may end anywhere.
            guard (try? BlobKey(validating: bytes + [UInt8(ascii: "x")])) != nil else {
                throw ParseError(description: "grant '\(grant)': the prefix breaks the key rules")
            }
            return .prefix(bytes)
        }
        do throws(StoreError) { _ = try BlobKey(validating: bytes) } catch {
            throw ParseError(description: "grant '\(grant)': \(error)")
        }
        return .key(bytes)
    }

    public var description: String {
        pattern == .everything ? action.rawValue + ":*" : action.rawValue + ":" + pattern.description
    }
}

extension Grant.Pattern {
    /// True if the pattern covers the key whose bytes (`BUCKET/REST`) are given.
    public func covers(key: some Collection<UInt8>) -> Bool {
        switch self {
        case .everything: true
        case .bucket(let name): key.count > name.utf8.count && key.starts(with: name.utf8)
            && key.dropFirst(name.utf8.count).first == UInt8(ascii: "/")
        case .prefix(let bytes): key.starts(with: bytes)
        case .key(let bytes): key.elementsEqual(bytes)
        }
    }

    /// True if the pattern covers every key that starts with `prefix` (a listing's).
    public func coversEvery(startingWith prefix: some Collection<UInt8>) -> Bool {
        switch self {
        case .everything: true
        case .bucket(let name): prefix.count > name.utf8.count && prefix.starts(with: name.utf8)
            && prefix.dropFirst(name.utf8.count).first == UInt8(ascii: "/")
        case .prefix(let bytes): prefix.starts(with: bytes)
        case .key: false
        }
    }

    /// True if the pattern covers every key of `bucket`.
    public func coversAll(of bucket: String) -> Bool {
        switch self {
        case .everything: true
        case .bucket(let name): name == bucket
        case .prefix(let bytes): bytes.elementsEqual(bucket.utf8 + [UInt8(ascii: "/")])
        case .key: false
        }
    }

    /// True if the pattern covers some key of `bucket`.
    public func touches(_ bucket: String) -> Bool {
        switch self {
        case .everything: true
        case .bucket(let name): name == bucket
        case .prefix(let bytes), .key(let bytes):
            bytes.count > bucket.utf8.count && bytes.starts(with: bucket.utf8)
                && bytes[bucket.utf8.count] == UInt8(ascii: "/")
        }
    }
}

/// A credential's grants, and the one place that decides what they allow. Every dialect asks
/// these questions of the principal's grants, so /v1, tus, S3 and share links agree.
public struct Grants: Sendable, Equatable, CustomStringConvertible {
    public let list: [Grant]

    public init(_ list: [Grant]) {
        var seen = Set<Grant>()
        self.list = list.filter { seen.insert($0).inserted }
    }

    /// No grant at all.
    public static let none = Grants([])
    /// Every action on everything (open access).
    public static let everything = Grants(Grant.Action.allCases.map { Grant($0) })

    /// Parses a comma-separated list (`read,write:photos/*`); empty items are refused.
    public init(parsing text: some StringProtocol) throws(Grant.ParseError) {
        var list: [Grant] = []
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            list.append(try Grant(parsing: item))
        }
        self.init(list)
    }

    /// Parses a list of grant texts, as JSON carries them.
    public init(parsing texts: [String]) throws(Grant.ParseError) {
        var list: [Grant] = []
        for text in texts { list.append(try Grant(parsing: text)) }
        self.init(list)
    }

    public var description: String { list.map(\.description).joined(separator: ",") }

    /// True if some grant of `action` covers the key (its bytes, `BUCKET/REST`).
    public func allows(_ action: Grant.Action, key: some Collection<UInt8>) -> Bool {
        list.contains { $0.action == action && $0.pattern.covers(key: key) }
    }

    /// What a write to the key may do: replace what is there (`write`), only create (`create`),
    /// or nothing (nil).
    public func write(key: some Collection<UInt8>) -> WriteAllowance? {
        if allows(.write, key: key) { return .replace }
        if allows(.create, key: key) { return .createOnly }
        return nil
    }

    /// What a write may do.
    public enum WriteAllowance: Sendable, Equatable {
        case replace, createOnly
    }

    /// True if some `read` grant covers every key that starts with `prefix`: a listing.
    public func allowsListing(prefix: some Collection<UInt8>) -> Bool {
        list.contains { $0.action == .read && $0.pattern.coversEvery(startingWith: prefix) }
    }

    /// True if some grant of `action` covers every key of `bucket` (bucket settings, creating
    /// or deleting the bucket).
    public func allows(_ action: Grant.Action, wholeBucket bucket: String) -> Bool {
        list.contains { $0.action == action && $0.pattern.coversAll(of: bucket) }
    }

    /// True if some grant (of any action) covers some key of `bucket`: ListBuckets shows it.
    public func touches(bucket: String) -> Bool {
        list.contains { $0.pattern.touches(bucket) }
    }

    /// True if some grant of `action` has the pattern `*` (`admin:*` manages keys).
    public func allowsEverywhere(_ action: Grant.Action) -> Bool {
        list.contains { $0.action == action && $0.pattern == .everything }
    }

    /// Both lists' grants.
    public func union(_ other: Grants) -> Grants {
        Grants(list + other.list)
    }
}

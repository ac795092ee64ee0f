/// A credential's grants, and the one place that decides what they allow. Every dialect asks
/// these questions of the principal's grants, so /v1, tus, S3 and share links agree.
public struct Grants: Sendable, Equatable, CustomStringConvertible {
    public let list: [Grant]

    public init(_ list: [Grant]) {
        var seen = Set<Grant>()
        self.list = list.filter { seen.insert($0).inserted }
    }

    /// Grants as given, repeats and all (the evaluator does not mind them): for unions made
    /// on every request, which must not hash every grant.
    private init(concatenating list: [Grant]) {
        self.list = list
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

    /// True if some grant of `action` covers every key that starts with `prefix` (a prefix's
    /// share link).
    public func allows(_ action: Grant.Action, everyKeyStartingWith prefix: some Collection<UInt8>) -> Bool {
        list.contains { $0.action == action && $0.pattern.coversEvery(startingWith: prefix) }
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
    /// Both lists' grants (a grant in both may appear twice). Cheap when either is empty, as
    /// the grants every caller holds usually are.
    public func union(_ other: Grants) -> Grants {
        if other.list.isEmpty { return self }
        if list.isEmpty { return other }
        return Grants(concatenating: list + other.list)
    }
}

/// What one operation needs of the caller's grants. Each dialect says what an operation needs;
/// `Grants.permits` decides, for all of them.
public enum AccessRequirement: Sendable, Equatable, CustomStringConvertible {
    /// Nothing (operational endpoints, tus discovery).
    case nothing
    /// `action` on the key (its bytes, `BUCKET/REST`). `.write` is met by `write` or `create`:
    /// the commit then refuses a replacement (`Grants.write(key:)`).
    case key(Grant.Action, [UInt8])
    /// `action` on a key not known yet (a content-addressed upload is stored at its digest):
    /// only a grant on `*` holds every key it may turn out to be.
    case anyKey(Grant.Action)
    /// A listing of every key starting with these bytes.
    case listing([UInt8])
    /// `action` on every key starting with these bytes (a share link of a prefix). `.write` is
    /// met by `write` or `create`, as for `.key`.
    case everyKey(Grant.Action, prefix: [UInt8])
    /// `action` on every key of the bucket (creating, deleting or configuring it).
    case wholeBucket(Grant.Action, String)
    /// Some grant on some key of the bucket (HEAD of it, its location, DeleteObjects, which
    /// then decides per key).
    case bucket(String)
    /// Some grant at all (ListBuckets, which then shows only the buckets the grants touch).
    case someGrant
    /// `action` on `*` (`admin:*` manages keys).
    case everywhere(Grant.Action)

    /// The action a refusal names.
    public var action: String {
        switch self {
        case .nothing, .someGrant, .bucket: "any"
        case .key(let action, _), .anyKey(let action), .wholeBucket(let action, _), .everywhere(let action),
             .everyKey(let action, _): action.rawValue
        case .listing: "read"
        }
    }

    public var description: String {
        switch self {
        case .nothing: "nothing"
        case .key(let action, let key): "\(action.rawValue) on \(String(decoding: key, as: UTF8.self))"
        case .anyKey(let action), .everywhere(let action): "\(action.rawValue) on *"
        case .listing(let prefix): "read on every key starting with '\(String(decoding: prefix, as: UTF8.self))'"
        case .everyKey(let action, let prefix):
            "\(action.rawValue) on every key starting with '\(String(decoding: prefix, as: UTF8.self))'"
        case .wholeBucket(let action, let bucket): "\(action.rawValue) on every key of \(bucket)"
        case .bucket(let bucket): "a grant on \(bucket)"
        case .someGrant: "a grant"
        }
    }
}

extension Grants {
    /// True if the grants meet `requirement`.
    public func permits(_ requirement: AccessRequirement) -> Bool {
        switch requirement {
        case .nothing: true
        case .key(.write, let key): write(key: key) != nil
        case .key(let action, let key): allows(action, key: key)
        case .anyKey(.write): allowsEverywhere(.write) || allowsEverywhere(.create)
        case .anyKey(let action), .everywhere(let action): allowsEverywhere(action)
        case .listing(let prefix): allowsListing(prefix: prefix)
        case .everyKey(.write, let prefix): allows(.write, everyKeyStartingWith: prefix) || allows(.create, everyKeyStartingWith: prefix)
        case .everyKey(let action, let prefix): allows(action, everyKeyStartingWith: prefix)
        case .wholeBucket(let action, let bucket): allows(action, wholeBucket: bucket)
        case .bucket(let bucket): touches(bucket: bucket)
        case .someGrant: !list.isEmpty
        }
    }

    /// What a content-addressed write (its key not known yet) may do: replace, only create, or nothing.
    public var writeAnywhere: WriteAllowance? {
        if allowsEverywhere(.write) { return .replace }
        if allowsEverywhere(.create) { return .createOnly }
        return nil
    }
}

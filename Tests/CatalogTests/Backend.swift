import Foundation
import GRDB
import PostgresClient
import Synchronization
import Testing
@testable import BlobStore
@testable import CatalogPostgres
@testable import CatalogSQLite

/// Everything a catalog backend implements: blob records, buckets, tus uploads, multipart, access.
typealias Catalog = BlobIndex & BucketIndex & UploadIndex & MultipartIndex & AccessIndex & EventOutbox & VersionIndex

/// A catalog backend the conformance suite runs against. A new backend runs every test of the
/// suite by being added to `all`.
struct Backend: Sendable, CustomTestStringConvertible {
    let name: String
    /// A new, empty catalog of its own, opened as production opens it (`OpenedCatalog`).
    let open: @Sendable () throws -> any Catalog
    /// A catalog whose storage was made by the backend's first schema version only, holding
    /// what it returns as that version stored it, then opened (and so migrated) by today's code.
    let openFirstSchema: @Sendable () throws -> (any Catalog, FirstSchemaContent)
    /// Writes rows behind `catalog`'s back (as a hand or an older release might): a copy of
    /// the blob row at `source` at each of `keys`, and a multipart upload at each. Returns where
    /// the catalog reports rows whose key fails validation.
    let writeRawRows: @Sendable (_ catalog: any Catalog, _ source: BlobKey, _ keys: [[UInt8]]) throws -> InvalidKeyRows
    /// Makes `catalog`'s storage refuse every write of a blob row at `key` (a trigger raising an
    /// error, as a full or failing database would refuse it); returns the error the catalog
    /// reports for it.
    let refuseWrites: @Sendable (_ catalog: any Catalog, _ key: BlobKey) throws -> StoreError
    /// `count` handles on one new catalog, as that many nodes of a cluster would open it; nil
    /// for a backend that one process owns (SQLite: the data directory's lock).
    var openNodes: (@Sendable (_ count: Int) throws -> [any Catalog])? = nil
    /// How the backend keeps garbage versions.
    var garbage: GarbageKeeping = .local

    var testDescription: String { name }

    /// PostgreSQL whether or not it can start here: a test that cannot start it fails.
    static let all: [Backend] = [.sqlite, .postgres]
    /// The backends several nodes share.
    static var shared: [Backend] { all.filter { $0.openNodes != nil } }
    /// The backends whose garbage the cluster shares, with claims on uploads.
    static var sharedBookkeeping: [Backend] { all.filter { if case .shared = $0.garbage { true } else { false } } }
}

/// How a backend keeps the versions that commits and removals replaced.
enum GarbageKeeping: Sendable {
    /// For one node: forgotten once their files are gone (`collectedGarbage`, `clearGarbage`).
    case local
    /// For the cluster: kept until a reclaim after the grace period; `collectedGarbage` and
    /// `clearGarbage` leave them be. The cluster also claims uploads, one node at a time.
    case shared(ClusterBookkeeping)
}

/// The bookkeeping of a catalog that several nodes share (not in the catalog protocols yet).
struct ClusterBookkeeping: Sendable {
    /// Reclaims versions replaced at least `grace` seconds ago, up to `limit`, calling `remove` for each.
    let reclaim: @Sendable (_ catalog: any Catalog, _ grace: Int64, _ limit: Int, _ remove: (String) -> Void) throws -> Int
    let isGarbage: @Sendable (_ catalog: any Catalog, _ version: String) throws -> Bool
    /// Claims upload `id` for `node` until `until`; false if another node holds it.
    let claim: @Sendable (_ catalog: any Catalog, _ id: String, _ node: String, _ until: Int64) throws -> Bool
    let release: @Sendable (_ catalog: any Catalog, _ id: String, _ node: String) throws -> Void

    static let postgres = ClusterBookkeeping(reclaim: { catalog, grace, limit, remove in
        try postgres(catalog).reclaim(olderThan: grace, limit: limit, remove: remove)
    }, isGarbage: { catalog, version in
        try postgres(catalog).isGarbage(version)
    }, claim: { catalog, id, node, until in
        try postgres(catalog).claimUpload(id, node: node, until: until)
    }, release: { catalog, id, node in
        try postgres(catalog).releaseUpload(id, node: node)
    })

    private static func postgres(_ catalog: any Catalog) throws -> PostgresBlobIndex {
        guard let index = backendIndex(catalog) as? PostgresBlobIndex else { throw TestFailure("not a PostgresBlobIndex: \(type(of: catalog))") }
        return index
    }
}

extension Backend {
    static let sqlite = Backend(name: "SQLite", open: {
        try OpenedCatalog(.sqlite, directory: CatalogRun.newDirectory())
    }, openFirstSchema: {
        let directory = try CatalogRun.newDirectory()
        try FirstSchema.sqlite(at: directory + "/index.sqlite")
        return (try OpenedCatalog(.sqlite, directory: directory), FirstSchema.common)
    }, writeRawRows: { catalog, source, keys in
        guard let index = backendIndex(catalog) as? SQLiteBlobIndex else { throw TestFailure("not an SQLiteBlobIndex") }
        try index.pool.write { db in
            for (i, key) in keys.enumerated() {
                try db.execute(sql: """
                    INSERT INTO blobs (key, version, size, sha256, content_type, modified)
                    SELECT ?, version, size, sha256, content_type, modified FROM blobs WHERE key = ?
                    """, arguments: [Data(key), Data(source.bytes)])
                try db.execute(sql: "INSERT INTO multipart_uploads (id, key, content_type, created, expires) VALUES (?, ?, '', 0, 0)",
                               arguments: ["raw\(i)", Data(key)])
            }
        }
        return index.invalidKeys
    }, refuseWrites: { catalog, key in
        guard let index = backendIndex(catalog) as? SQLiteBlobIndex else { throw TestFailure("not an SQLiteBlobIndex") }
        let hex = key.bytes.map { String(format: "%02x", $0) }.joined()
        try index.pool.write { db in
            for event in ["INSERT", "UPDATE"] {
                try db.execute(sql: """
                    CREATE TRIGGER refuse_\(event.lowercased()) BEFORE \(event) ON blobs WHEN NEW.key = X'\(hex)'
                    BEGIN SELECT RAISE(ABORT, 'refused by the test'); END
                    """)
            }
        }
        return .index(.failed("refused by the test"))
    })

    static let postgres = Backend(name: "PostgreSQL", open: {
        try OpenedCatalog(.postgres(url: TestPostgres.running().freshURL(), connections: 8), directory: CatalogRun.newDirectory())
    }, openFirstSchema: {
        let url = try TestPostgres.running().freshURL()
        try FirstSchema.postgres(at: url)
        return (try OpenedCatalog(.postgres(url: url, connections: 8), directory: CatalogRun.newDirectory()), FirstSchema.postgresContent)
    }, writeRawRows: { catalog, source, keys in
        guard let index = backendIndex(catalog) as? PostgresBlobIndex else { throw TestFailure("not a PostgresBlobIndex") }
        try index.pool.transaction { connection throws(PostgresError) in
            for (i, key) in keys.enumerated() {
                try connection.execute("""
                    INSERT INTO blobs (key, version, size, sha256, content_type, modified)
                    SELECT $1, version, size, sha256, content_type, modified FROM blobs WHERE key = $2
                    """, [.bytes(key), .bytes(source.bytes)])
                try connection.execute("INSERT INTO multipart_uploads (id, key, content_type, created, expires) VALUES ($1, $2, '', 0, 0)",
                                       [.text("raw\(i)"), .bytes(key)])
            }
        }
        return index.invalidKeys
    }, refuseWrites: { catalog, key in
        guard let index = backendIndex(catalog) as? PostgresBlobIndex else { throw TestFailure("not a PostgresBlobIndex") }
        let hex = key.bytes.map { String(format: "%02x", $0) }.joined()
        try index.pool.transaction { connection throws(PostgresError) in
            try connection.simple("""
                CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF NEW.key = decode('\(hex)', 'hex') THEN RAISE EXCEPTION 'refused by the test'; END IF;
                    RETURN NEW;
                END $$;
                CREATE TRIGGER refuse BEFORE INSERT OR UPDATE ON blobs FOR EACH ROW EXECUTE FUNCTION refuse()
                """)
        }
        // libpq's whole error message: severity, text, and where the trigger raised it.
        return .index(.failed("P0001: ERROR:  refused by the test\nCONTEXT:  PL/pgSQL function refuse() line 3 at RAISE"))
    }, openNodes: { count in
        let url = try TestPostgres.running().freshURL()
        return try (0..<count).map { _ in try OpenedCatalog(.postgres(url: url, connections: 8), directory: CatalogRun.newDirectory()) }
    }, garbage: .shared(.postgres))
}

/// What the catalog suite leaves behind until it ends: the SQLite files of its tests (an index
/// may be used until the test's last line, so its folder cannot go with a value the test holds)
/// and the run's PostgreSQL, if a test started it.
struct CatalogRun: SuiteTrait, TestScoping {
    static let folder = NSTemporaryDirectory() + "blobd-catalog-\(getpid())"

    /// A new folder for one test's files.
    static func newDirectory() throws -> String {
        let path = folder + "/" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        defer {
            TestPostgres.stopShared()
            try? FileManager.default.removeItem(atPath: Self.folder)
        }
        try await function()
    }
}

extension Trait where Self == CatalogRun {
    /// Cleans up after the catalog suite (`CatalogRun`).
    static var catalogRun: Self { Self() }
}

/// The catalog conformance suite: every test runs against every `Backend.all`.
@Suite(.catalogRun) struct CatalogConformance {}

// MARK: Helpers

/// A new version id: 32 lowercase hex digits.
func newVersion() -> String {
    UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
}

/// A record at `key` with a new version and the given size.
func record(_ key: String, size: UInt64 = 3, modified: Int64 = 1_700_000_000) throws -> BlobRecord {
    BlobRecord(key: try BlobKey(key), version: newVersion(), size: size, sha256: Array(repeating: UInt8(size & 0xFF), count: 32),
               contentType: "application/octet-stream", modified: modified)
}

// MARK: Adapter to the catalog's API (the one place a change of that API touches)

/// A write condition as the HTTP layers phrase them, with the version as the entity tag.
enum Condition: Sendable, CustomStringConvertible {
    /// No condition.
    case unconditional
    /// Create-only: If-None-Match: *.
    case createOnly
    /// If-Match: * (some version exists).
    case exists
    /// If-Match with these tags: the current version is one of them.
    case ifMatch([String])
    /// If-None-Match with these tags: no current version, or one not among them.
    case ifNoneMatch([String])
    /// If-Unmodified-Since: no current version, or one modified at or before this time.
    case ifUnmodifiedSince(Int64)
    /// S3's x-amz-if-match-last-modified-time: a current version modified at exactly this time.
    case modifiedAt(Int64)
    /// S3's x-amz-if-match-size: a current version of exactly this size.
    case sizeIs(UInt64)

    /// True if the condition holds for `current` (nil when the key is absent).
    func holds(for current: BlobRecord?) -> Bool {
        switch self {
        case .unconditional: true
        case .createOnly: current == nil
        case .exists: current != nil
        case .ifMatch(let tags): current.map { tags.contains($0.version) } ?? false
        case .ifNoneMatch(let tags): current.map { !tags.contains($0.version) } ?? true
        case .ifUnmodifiedSince(let time): current.map { $0.modified <= time } ?? true
        case .modifiedAt(let time): current?.modified == time
        case .sizeIs(let size): current?.size == size
        }
    }

    /// The catalog's `WriteCondition` for it (tags are versions, as on /v1).
    var writeCondition: WriteCondition {
        switch self {
        case .unconditional: .always
        case .createOnly: .createOnly
        case .exists: WriteCondition(ifMatch: .any)
        case .ifMatch(let tags): WriteCondition(ifMatch: .tags(tags.map { WriteCondition.Tag($0) }))
        case .ifNoneMatch(let tags): WriteCondition(ifNoneMatch: .tags(tags.map { WriteCondition.Tag($0) }))
        case .ifUnmodifiedSince(let time): WriteCondition(ifUnmodifiedSince: time)
        case .modifiedAt(let time): WriteCondition(ifModifiedAt: time)
        case .sizeIs(let size): WriteCondition(ifSize: size)
        }
    }

    var description: String {
        switch self {
        case .unconditional: "unconditional"
        case .createOnly: "create-only"
        case .exists: "If-Match *"
        case .ifMatch(let tags): "If-Match \(tags)"
        case .ifNoneMatch(let tags): "If-None-Match \(tags)"
        case .ifUnmodifiedSince(let time): "If-Unmodified-Since \(time)"
        case .modifiedAt(let time): "modified at \(time)"
        case .sizeIs(let size): "size \(size)"
        }
    }
}

extension CommitRequest {
    /// A request to store `record` if `condition` holds.
    init(_ record: BlobRecord, completingUpload: String? = nil, when condition: Condition, events: EventDraft? = nil) {
        self.init(record, completingUpload: completingUpload, if: condition.writeCondition, events: events)
    }
}

extension GroupCommit {
    /// Commits through the group commit if `condition` holds, and waits for the outcome.
    func commit(_ record: BlobRecord, completingUpload: String? = nil, when condition: Condition) throws(StoreError) -> IndexCommit {
        try waitFor { commit(record, completingUpload: completingUpload, if: condition.writeCondition, then: $0) }
    }
}

extension BlobIndex {
    /// Commits if `condition` holds, as a batch of one.
    func commit(_ record: BlobRecord, completingUpload: String? = nil, when condition: Condition) throws(StoreError) -> IndexCommit {
        try commit(CommitRequest(record, completingUpload: completingUpload, when: condition))
    }

    /// Removes the record at `key` if `condition` holds for it.
    @discardableResult
    func remove(_ key: BlobKey, when condition: Condition) throws(StoreError) -> BlobRecord {
        try remove(key, if: condition.writeCondition)
    }

    /// The garbage versions this backend's node bookkeeping holds (solo or shared).
    func garbage() throws(StoreError) -> [String] {
        if let solo = backendIndex(self) as? any SoloBookkeeping { return try solo.garbage() }
        if let shared = backendIndex(self) as? any SharedBookkeeping { return try shared.garbage() }
        return []
    }

    /// A single node's catalog forgets a collected version with its next write; a shared one
    /// keeps it for `reclaim` (it has no such requirement).
    func collectedGarbage(_ version: String) {
        (backendIndex(self) as? any SoloBookkeeping)?.collectedGarbage(version)
    }

    /// A single node's catalog forgets every garbage version; a shared one keeps them (it has no
    /// such requirement: one node's start never clears the cluster's garbage).
    func clearGarbage() throws(StoreError) {
        try (backendIndex(self) as? any SoloBookkeeping)?.clearGarbage()
    }

    /// Commits unconditionally.
    @discardableResult
    func put(_ record: BlobRecord) throws(StoreError) -> IndexCommit {
        try commit(record, when: .unconditional)
    }

    /// Every key under `prefix`, a page of `limit` at a time.
    func allKeys(prefix: [UInt8], after: [UInt8]? = nil, pageSize: Int) throws(StoreError) -> [BlobKey] {
        var keys: [BlobKey] = [], after = after
        while true {
            let page = try list(prefix: prefix, after: after, limit: pageSize)
            keys += page.map(\.key)
            guard page.count == pageSize, let last = page.last else { return keys }
            after = last.key.bytes
        }
    }
}

/// Runs `body(i)` for i in 0..<count on as many threads at once, and returns the results in order.
func concurrently<T: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) -> T) -> [T] {
    let slots = Mutex<[Int: T]>([:])
    let start = DispatchSemaphore(value: 0)
    let group = DispatchGroup()
    for i in 0..<count {
        group.enter()
        Thread {
            start.wait()
            let value = body(i)
            slots.withLock { $0[i] = value }
            group.leave()
        }.start()
    }
    for _ in 0..<count { start.signal() }
    group.wait()
    return slots.withLock { slots in (0..<count).compactMap { slots[$0] } }
}

import Foundation
import GRDB
import PostgresClient
import Synchronization
import Testing
@testable import BlobStore
@testable import CatalogPostgres
@testable import CatalogSQLite

/// Everything a catalog backend implements: blob records, buckets, tus uploads, multipart.
typealias Catalog = BlobIndex & BucketIndex & UploadIndex & MultipartIndex

/// A catalog backend the conformance suite runs against. A new backend runs every test of the
/// suite by being added to `all`.
struct Backend: Sendable, CustomTestStringConvertible {
    let name: String
    /// A new, empty catalog of its own.
    let open: @Sendable () throws -> any Catalog
    /// A catalog whose storage was made by the backend's first schema version only, holding
    /// `FirstSchema.record` and `FirstSchema.upload` as that version stored them, then opened
    /// (and so migrated) by the current code.
    let openFirstSchema: @Sendable () throws -> any Catalog
    /// `count` handles on one new catalog, as that many nodes of a cluster would open it; nil
    /// for a backend that one process owns (SQLite: the data directory's lock).
    var openNodes: (@Sendable (_ count: Int) throws -> [any Catalog])? = nil

    var testDescription: String { name }

    static let all: [Backend] = [.sqlite] + (TestPostgres.isInstalled ? [.postgres] : [])
    /// The backends several nodes share.
    static var shared: [Backend] { all.filter { $0.openNodes != nil } }
}

extension Backend {
    static let sqlite = Backend(name: "SQLite", open: {
        try SQLiteBlobIndex(path: try CatalogRun.newDirectory() + "/index.sqlite")
    }, openFirstSchema: {
        let path = try CatalogRun.newDirectory() + "/index.sqlite"
        do {
            let queue = try DatabaseQueue(path: path)
            try SQLiteBlobIndex.migrator.migrate(queue, upTo: "1-tables")
            try queue.write { db in
                let record = FirstSchema.record, upload = FirstSchema.upload
                try db.execute(sql: "INSERT INTO blobs (key, version, size, sha256, content_type, modified) VALUES (?, ?, ?, ?, ?, ?)",
                               arguments: [Data(record.key.bytes), record.version, Int64(record.size), Data(record.sha256),
                                           record.contentType, record.modified])
                try db.execute(sql: """
                    INSERT INTO uploads (id, length, offset, hash_state, metadata, key, content_type, expires, completed_key)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)
                    """, arguments: [upload.id, Int64(upload.length ?? 0), Int64(upload.offset), Data(upload.hashState), upload.metadata,
                                     upload.key.map { Data($0.bytes) }, upload.attributes.contentType, upload.expires])
            }
        }
        return try SQLiteBlobIndex(path: path)
    })

    static let postgres = Backend(name: "PostgreSQL", open: {
        try PostgresBlobIndex(url: try TestPostgres.running().freshURL(), connections: 8)
    }, openFirstSchema: {
        let url = try TestPostgres.running().freshURL()
        do {
            // As PostgresSchema.migrate applied its first step, in the role's own schema.
            let connection = try PostgresConnection(url)
            try connection.simple("CREATE TABLE blobd_migrations (name text PRIMARY KEY, applied bigint NOT NULL)")
            try connection.simple(PostgresSchema.steps[0].sql)
            try connection.execute("INSERT INTO blobd_migrations (name, applied) VALUES ($1, 0)", [.text(PostgresSchema.steps[0].name)])
            let record = FirstSchema.record, upload = FirstSchema.upload
            try connection.execute("INSERT INTO blobs (key, version, size, sha256, content_type, modified) VALUES ($1, $2, $3, $4, $5, $6)",
                                   [.bytes(record.key.bytes), .text(record.version), .int(Int64(record.size)), .bytes(record.sha256),
                                    .text(record.contentType), .int(record.modified)])
            try connection.execute("""
                INSERT INTO uploads (id, length, "offset", hash_state, metadata, key, content_type, expires, completed_key)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL)
                """, [.text(upload.id), .int(Int64(upload.length ?? 0)), .int(Int64(upload.offset)), .bytes(upload.hashState),
                      .text(upload.metadata), upload.key.map { .bytes($0.bytes) } ?? .null, .text(upload.attributes.contentType),
                      .int(upload.expires)])
        }
        return try PostgresBlobIndex(url: url, connections: 8)
    }, openNodes: { count in
        let url = try TestPostgres.running().freshURL()
        return try (0..<count).map { _ in try PostgresBlobIndex(url: url, connections: 8) }
    })
}

/// What the first schema version of every backend could hold: a blob record and a tus upload
/// with none of the attributes later versions added.
enum FirstSchema {
    static let record = BlobRecord(key: try! BlobKey("old/caf\u{E9}"), version: "0123456789abcdef0123456789abcdef", size: 5,
                                   sha256: Array(repeating: 0xAB, count: 32), contentType: "text/plain", modified: 1_600_000_000)
    static let upload = UploadRecord(id: "fedcba9876543210fedcba9876543210", length: 10, offset: 4, hashState: [1, 2, 3],
                                     metadata: "filename Zm9v", key: try! BlobKey("old/upload"),
                                     attributes: BlobAttributes(contentType: "text/csv"), expires: 4_102_444_800)
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

extension BlobIndex {
    /// Commits and waits for the outcome.
    func commit(_ record: BlobRecord, completingUpload: String? = nil, if condition: WriteCondition) throws(StoreError)
        -> IndexCommit {
        try waitFor { commit(record, completingUpload: completingUpload, if: condition, then: $0) }
    }

    /// Commits unconditionally.
    @discardableResult
    func put(_ record: BlobRecord) throws(StoreError) -> IndexCommit {
        try commit(record, if: .always)
    }

    /// The garbage this backend's bookkeeping holds (solo or shared).
    func garbage() throws(StoreError) -> [String] {
        if let solo = self as? any SoloBookkeeping { return try solo.garbage() }
        if let shared = self as? any SharedBookkeeping { return try shared.garbage() }
        return []
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

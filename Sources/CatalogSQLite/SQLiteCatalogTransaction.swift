import BlobCatalog
import BlobCore
import Foundation
import GRDB

/// A transaction of the SQLite catalog as the catalog's decisions see it: each row operation
/// one statement (cached where a commit or a sweep runs it per row). The one writer needs no
/// key locks: no other change can run meanwhile.
public struct SQLiteCatalogTransaction: CatalogTransaction {
    public typealias Failure = any Error
    let db: Database
    let index: SQLiteBlobIndex

    // MARK: Current records

    public func current(_ key: BlobKey) throws -> BlobRecord? {
        try SQLiteBlobIndex.fetch(key, in: db)
    }

    public func insertCurrent(_ record: BlobRecord) throws -> Bool {
        try updateCurrent(record)
        return true
    }

    public func updateCurrent(_ record: BlobRecord) throws {
        try db.cachedStatement(sql: SQLiteBlobRow.upsert).execute(arguments: SQLiteBlobRow.arguments(record))
    }

    public func deleteCurrent(_ key: BlobKey) throws {
        try db.cachedStatement(sql: "DELETE FROM blobs WHERE key = ?").execute(arguments: [Data(key.bytes)])
    }

    public func completeUpload(_ id: String, into record: BlobRecord) throws {
        try db.cachedStatement(sql: "UPDATE uploads SET completed_key = ?, offset = ? WHERE id = ?")
            .execute(arguments: [Data(record.key.bytes), Int64(record.size), id])
    }

    public func dueCurrent(now: Int64, limit: Int) throws -> [(key: [UInt8], record: BlobRecord?)] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM blobs WHERE expires_at <= ? ORDER BY expires_at LIMIT ?"),
                         arguments: [now, limit])
            .map { row in (Array(row["key"] as Data), SQLiteBlobRow.record(from: row, reportingTo: index.invalidKeys)) }
    }

    public func setExpiry(ofKey key: [UInt8], to deadline: Int64?) throws {
        try db.execute(sql: "UPDATE blobs SET expires_at = ? WHERE key = ?", arguments: [deadline, Data(key)])
    }

    // MARK: Noncurrent versions and delete markers

    public func archiveCurrent(_ key: BlobKey, sweepAt: Int64?) throws {
        // A cached statement: a versioned bucket's every overwrite runs it.
        let columns = VersionRow.columns
        try db.cachedStatement(sql: "INSERT INTO blob_versions (\(columns), sweep_at) SELECT \(columns), ? FROM blobs WHERE key = ?")
            .execute(arguments: [sweepAt, Data(key.bytes)])
    }

    public func insertMarker(_ marker: BlobRecord) throws {
        try db.execute(sql: """
            INSERT INTO blob_versions (key, version, size, sha256, content_type, modified, versioned, delete_marker)
            VALUES (?, ?, ?, ?, ?, ?, ?, 1)
            """, arguments: [Data(marker.key.bytes), marker.version, Int64(marker.size), Data(marker.sha256), marker.contentType,
                             marker.modified, marker.versioned ? 1 : 0])
    }

    public func newestNoncurrent(_ key: BlobKey) throws -> VersionRow? {
        try versionRow(Row.fetchOne(db, sql: "SELECT * FROM blob_versions WHERE key = ? ORDER BY seq DESC LIMIT 1",
                                    arguments: [Data(key.bytes)]))
    }

    public func noncurrent(_ key: BlobKey, id: String) throws -> VersionRow? {
        try versionRow(id == "null"
            ? Row.fetchOne(db, sql: "SELECT * FROM blob_versions WHERE key = ? AND versioned = 0 ORDER BY seq DESC LIMIT 1",
                           arguments: [Data(key.bytes)])
            : Row.fetchOne(db, sql: "SELECT * FROM blob_versions WHERE key = ? AND version = ? AND versioned = 1 LIMIT 1",
                           arguments: [Data(key.bytes), id]))
    }

    public func noncurrentVersions(of key: BlobKey) throws -> [BlobVersion] {
        try Row.fetchAll(db, sql: "SELECT * FROM blob_versions WHERE key = ? ORDER BY seq DESC", arguments: [Data(key.bytes)])
            .compactMap(SQLiteBlobIndex.version(from:))
    }

    public func versionedKeys(prefix: [UInt8], after: [UInt8]?, limit: Int) throws -> [[UInt8]] {
        // From `after` (exclusive) when it sorts at or past the prefix, else from the prefix.
        let strict = after.map { !$0.lexicographicallyPrecedes(prefix) } ?? false
        let lower = strict ? after ?? prefix : prefix
        let upper = prefixUpperBound(of: prefix)
        let range = "key \(strict ? ">" : ">=") ?" + (upper == nil ? "" : " AND key < ?")
        var arguments: StatementArguments = [Data(lower)]
        if let upper { arguments += [Data(upper)] }
        let all = arguments + arguments + [limit]
        return try Data.fetchAll(db, sql: "SELECT key FROM blobs WHERE \(range) UNION SELECT key FROM blob_versions WHERE \(range) "
                                 + "ORDER BY key LIMIT ?", arguments: all).map { Array($0) }
    }

    public func deleteNoncurrent(_ seq: Int64) throws {
        try db.cachedStatement(sql: "DELETE FROM blob_versions WHERE seq = ?").execute(arguments: [seq])
    }

    public func promote(_ row: VersionRow) throws {
        let columns = VersionRow.columns
        try db.execute(sql: "INSERT INTO blobs (\(columns)) SELECT \(columns) FROM blob_versions WHERE seq = ?", arguments: [row.seq])
        try deleteNoncurrent(row.seq)
    }

    public func dropNullNoncurrent(_ key: BlobKey) throws -> [String] {
        let rows = try Row.fetchAll(db, sql: "SELECT seq, version, delete_marker FROM blob_versions WHERE key = ? AND versioned = 0",
                                    arguments: [Data(key.bytes)])
        try db.execute(sql: "DELETE FROM blob_versions WHERE key = ? AND versioned = 0", arguments: [Data(key.bytes)])
        return rows.filter { ($0["delete_marker"] as Int64) == 0 }.map { $0["version"] }
    }

    public func stampNewestMarker(_ key: BlobKey, sweepAt: Int64) throws {
        try db.cachedStatement(sql: """
            UPDATE blob_versions SET sweep_at = ? WHERE seq = (SELECT MAX(seq) FROM blob_versions WHERE key = ?) AND delete_marker = 1
            """).execute(arguments: [sweepAt, Data(key.bytes)])
    }

    public func stampIfLoneMarker(_ key: BlobKey, at time: Int64) throws {
        let bytes = Data(key.bytes)
        guard try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM blobs WHERE key = ?)"), arguments: [bytes]) == false
        else { return }
        let rows = try Row.fetchAll(db.cachedStatement(sql: "SELECT seq, delete_marker FROM blob_versions WHERE key = ? LIMIT 2"),
                                    arguments: [bytes])
        guard rows.count == 1, let row = rows.first, (row["delete_marker"] as Int64? ?? 0) != 0 else { return }
        try setSweep(ofRow: row["seq"], to: time)
    }

    public func setSweep(ofRow seq: Int64, to time: Int64?) throws {
        try db.cachedStatement(sql: "UPDATE blob_versions SET sweep_at = ? WHERE seq = ?").execute(arguments: [time, seq])
    }

    public func setLock(_ lock: ObjectLock, of key: BlobKey, row seq: Int64?) throws {
        let values: StatementArguments = [lock.mode?.rawValue, lock.retainUntil, lock.legalHold ? 1 : 0]
        if let seq {
            try db.execute(sql: "UPDATE blob_versions SET lock_mode = ?, lock_until = ?, legal_hold = ? WHERE seq = ?", arguments: values + [seq])
        } else {
            try db.execute(sql: "UPDATE blobs SET lock_mode = ?, lock_until = ?, legal_hold = ? WHERE key = ?",
                           arguments: values + [Data(key.bytes)])
        }
    }

    public func dueNoncurrent(now: Int64, limit: Int) throws -> [(seq: Int64, version: BlobVersion?)] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM blob_versions WHERE sweep_at <= ? ORDER BY sweep_at LIMIT ?"),
                         arguments: [now, limit]).map { row in (row["seq"], SQLiteBlobIndex.version(from: row)) }
    }

    public func succession(ofRow seq: Int64, key: BlobKey, olderToo: Bool) throws -> (since: Int64?, hasOlder: Bool) {
        let key = Data(key.bytes)
        let newer = try Int64.fetchOne(db.cachedStatement(sql: "SELECT modified FROM blob_versions WHERE key = ? AND seq > ? ORDER BY seq LIMIT 1"),
                                       arguments: [key, seq])
        let since = try newer ?? Int64.fetchOne(db.cachedStatement(sql: "SELECT modified FROM blobs WHERE key = ?"), arguments: [key])
        // Asked only of a latest delete marker (whether it is left alone).
        guard since == nil && olderToo else { return (since, false) }
        let older = try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM blob_versions WHERE key = ? AND seq < ?)"),
                                      arguments: [key, seq])
        return (since, older ?? true)
    }

    // MARK: Bookkeeping

    public func addGarbage(_ version: String) throws {
        try SQLiteBlobIndex.addGarbage(version, in: db)
    }

    public func insertEvents(_ draft: EventDraft, facts: [EventFacts]?, for record: BlobRecord) throws {
        try index.insertEvents(draft, facts: facts, for: record, in: db)
    }

    // MARK: Concurrency: the one writer holds every key

    public func lockKey(_ key: BlobKey) {}

    public func tryLockKey(_ key: BlobKey) -> Bool { true }

    public func claimSweep() -> Bool { true }

    /// A noncurrent row with its number.
    private func versionRow(_ row: Row?) -> VersionRow? {
        guard let row, let version = SQLiteBlobIndex.version(from: row) else { return nil }
        return VersionRow(seq: row["seq"], version: version)
    }
}

import BlobCatalog
import BlobCore
import Foundation
import PostgresClient

/// A transaction of the PostgreSQL catalog as the catalog's decisions see it. Current rows
/// are read `FOR UPDATE` (a commit batch reads and locks its keys' rows in one statement,
/// `lockCurrent`, and this remembers them as its writes change them); the versioned operations
/// of a key hold its advisory lock; garbage is gathered and recorded in one statement when the
/// body is done (`recordGarbage`).
///
/// A class: the rows it locked and the garbage it gathered change as the body goes. One is
/// made per transaction (per attempt, when one is retried) and used by its one thread.
public final class PostgresCatalogTransaction: CatalogTransaction {
    public typealias Failure = PostgresError
    let connection: PostgresConnection
    let index: PostgresBlobIndex
    /// False for a reader: rows are read without locks.
    private let locking: Bool
    /// The current rows this transaction locked, as its writes left them (nil: no row).
    private var locked: [BlobKey: BlobRecord?] = [:]
    private var garbage: [String] = []

    init(_ connection: PostgresConnection, index: PostgresBlobIndex, locking: Bool) {
        self.connection = connection
        self.index = index
        self.locking = locking
    }

    /// Reads and locks the current rows of `keys` (in key order, as every batch locks them).
    func lockCurrent(_ keys: [BlobKey]) throws(PostgresError) {
        let rows = try PostgresBlobIndex.fetchForUpdate(keys, in: connection)
        for key in keys { locked[key] = .some(rows[key]) }
    }

    /// Records the garbage the body gathered, in one statement.
    func recordGarbage() throws(PostgresError) {
        guard !garbage.isEmpty else { return }
        try connection.execute("INSERT INTO garbage (version, since) SELECT unnest($1::text[]), $2 ON CONFLICT (version) DO NOTHING",
                               [.textArray(garbage), .int(index.clock.seconds)])
        garbage = []
    }

    // MARK: Current records

    public func current(_ key: BlobKey) throws(PostgresError) -> BlobRecord? {
        if let known = locked[key] { return known }
        return try PostgresBlobIndex.fetchForUpdate([key], in: connection, locking: locking)[key]
    }

    public func insertCurrent(_ record: BlobRecord) throws(PostgresError) -> Bool {
        guard try connection.execute(PostgresBlobRow.insert, PostgresBlobRow.values(record)).affected == 1 else {
            locked[record.key] = nil  // another node's row: `current` reads and locks it
            return false
        }
        locked[record.key] = .some(record)
        return true
    }

    public func updateCurrent(_ record: BlobRecord) throws(PostgresError) {
        try connection.execute(PostgresBlobRow.update, PostgresBlobRow.values(record))
        locked[record.key] = .some(record)
    }

    public func deleteCurrent(_ key: BlobKey) throws(PostgresError) {
        try connection.execute("DELETE FROM blobs WHERE key = $1", [.bytes(key.bytes)])
        locked[key] = nil
    }

    public func completeUpload(_ id: String, into record: BlobRecord) throws(PostgresError) {
        try connection.execute("UPDATE uploads SET completed_key = $1, \"offset\" = $2 WHERE id = $3",
                               [.bytes(record.key.bytes), .int(Int64(record.size)), .text(id)])
    }

    /// Rows a writer holds are skipped (`SKIP LOCKED`): they wait for a later batch.
    public func dueCurrent(now: Int64, limit: Int) throws(PostgresError) -> [(key: [UInt8], record: BlobRecord?)] {
        try connection.execute("""
            SELECT \(PostgresBlobRow.selection) FROM blobs WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED
            """, [.int(now), .int(Int64(limit))]).rows.compactMap { row in
            row.bytes("key").map { ($0, PostgresBlobRow.record(from: row, reportingTo: index.invalidKeys)) }
        }
    }

    public func setExpiry(ofKey key: [UInt8], to deadline: Int64?) throws(PostgresError) {
        try connection.execute("UPDATE blobs SET expires_at = $1 WHERE key = $2", [deadline.map { .int($0) } ?? .null, .bytes(key)])
    }

    // MARK: Noncurrent versions and delete markers

    public func archiveCurrent(_ key: BlobKey, sweepAt: Int64?) throws(PostgresError) {
        let columns = VersionRow.columns
        try connection.execute("INSERT INTO blob_versions (\(columns), sweep_at) SELECT \(columns), $2 FROM blobs WHERE key = $1",
                               [.bytes(key.bytes), sweepAt.map { .int($0) } ?? .null])
    }

    public func insertMarker(_ marker: BlobRecord) throws(PostgresError) {
        try connection.execute("""
            INSERT INTO blob_versions (key, version, size, sha256, content_type, modified, versioned, delete_marker)
            VALUES ($1, $2, 0, $3, '', $4, $5, true)
            """, [.bytes(marker.key.bytes), .text(marker.version), .bytes(marker.sha256), .int(marker.modified),
                  .text(marker.versioned ? "t" : "f")])
    }

    public func newestNoncurrent(_ key: BlobKey) throws(PostgresError) -> VersionRow? {
        try connection.execute(Self.selectVersion + " WHERE key = $1 ORDER BY seq DESC LIMIT 1", [.bytes(key.bytes)]).rows.first
            .flatMap(Self.versionRow(from:))
    }

    public func noncurrent(_ key: BlobKey, id: String) throws(PostgresError) -> VersionRow? {
        let rows = id == "null"
            ? try connection.execute(Self.selectVersion + " WHERE key = $1 AND NOT versioned ORDER BY seq DESC LIMIT 1", [.bytes(key.bytes)]).rows
            : try connection.execute(Self.selectVersion + " WHERE key = $1 AND version = $2 AND versioned LIMIT 1",
                                     [.bytes(key.bytes), .text(id)]).rows
        return rows.first.flatMap(Self.versionRow(from:))
    }

    public func noncurrentVersions(of key: BlobKey) throws(PostgresError) -> [BlobVersion] {
        try connection.execute(Self.selectVersion + " WHERE key = $1 ORDER BY seq DESC", [.bytes(key.bytes)]).rows
            .compactMap(PostgresBlobIndex.version(from:))
    }

    public func versionedKeys(prefix: [UInt8], after: [UInt8]?, limit: Int) throws(PostgresError) -> [[UInt8]] {
        let strict = after.map { !$0.lexicographicallyPrecedes(prefix) } ?? false
        let lower = strict ? after ?? prefix : prefix
        let upper = prefixUpperBound(of: prefix)
        let range = "key \(strict ? ">" : ">=") $1" + (upper == nil ? " AND $2::bytea IS NULL" : " AND key < $2")
        return try connection.execute("SELECT key FROM blobs WHERE \(range) UNION SELECT key FROM blob_versions WHERE \(range) "
                                      + "ORDER BY key LIMIT $3", [.bytes(lower), upper.map { .bytes($0) } ?? .null, .int(Int64(limit))])
            .rows.compactMap { $0.bytes("key") }
    }

    public func deleteNoncurrent(_ seq: Int64) throws(PostgresError) {
        try connection.execute("DELETE FROM blob_versions WHERE seq = $1", [.int(seq)])
    }

    public func promote(_ row: VersionRow) throws(PostgresError) {
        let columns = VersionRow.columns
        try connection.execute("INSERT INTO blobs (\(columns)) SELECT \(columns) FROM blob_versions WHERE seq = $1", [.int(row.seq)])
        try deleteNoncurrent(row.seq)
        locked[row.version.record.key] = nil
    }

    public func dropNullNoncurrent(_ key: BlobKey) throws(PostgresError) -> [String] {
        try connection.execute("DELETE FROM blob_versions WHERE key = $1 AND NOT versioned RETURNING version, delete_marker",
                               [.bytes(key.bytes)]).rows.filter { $0.bool("delete_marker") == false }.compactMap { $0.text("version") }
    }

    public func stampNewestMarker(_ key: BlobKey, sweepAt: Int64) throws(PostgresError) {
        try connection.execute("""
            UPDATE blob_versions SET sweep_at = $1
            WHERE seq = (SELECT MAX(seq) FROM blob_versions WHERE key = $2) AND delete_marker
            """, [.int(sweepAt), .bytes(key.bytes)])
    }

    public func stampIfLoneMarker(_ key: BlobKey, at time: Int64) throws(PostgresError) {
        try connection.execute("""
            UPDATE blob_versions v SET sweep_at = $2 WHERE v.key = $1 AND v.delete_marker
            AND NOT EXISTS (SELECT 1 FROM blobs WHERE key = $1) AND NOT EXISTS (SELECT 1 FROM blob_versions o WHERE o.key = $1 AND o.seq <> v.seq)
            """, [.bytes(key.bytes), .int(time)])
    }

    public func setSweep(ofRow seq: Int64, to time: Int64?) throws(PostgresError) {
        try connection.execute("UPDATE blob_versions SET sweep_at = $1 WHERE seq = $2", [time.map { .int($0) } ?? .null, .int(seq)])
    }

    public func setLock(_ lock: ObjectLock, of key: BlobKey, row seq: Int64?) throws(PostgresError) {
        let values: [PostgresValue] = [lock.mode.map { .text($0.rawValue) } ?? .null, lock.retainUntil.map { .int($0) } ?? .null,
                                       .text(lock.legalHold ? "t" : "f")]
        if let seq {
            try connection.execute("UPDATE blob_versions SET lock_mode = $1, lock_until = $2, legal_hold = $3 WHERE seq = $4",
                                   values + [.int(seq)])
        } else {
            try connection.execute("UPDATE blobs SET lock_mode = $1, lock_until = $2, legal_hold = $3 WHERE key = $4",
                                   values + [.bytes(key.bytes)])
        }
    }

    /// Rows are locked as they are read (`SKIP LOCKED`).
    public func dueNoncurrent(now: Int64, limit: Int) throws(PostgresError) -> [(seq: Int64, version: BlobVersion?)] {
        try connection.execute(Self.selectVersion + " WHERE sweep_at <= $1 ORDER BY sweep_at LIMIT $2 FOR UPDATE SKIP LOCKED",
                               [.int(now), .int(Int64(limit))]).rows.compactMap { row in
            row.int("seq").map { ($0, PostgresBlobIndex.version(from: row)) }
        }
    }

    /// In one statement, `olderToo` or not.
    public func succession(ofRow seq: Int64, key: BlobKey, olderToo: Bool) throws(PostgresError) -> (since: Int64?, hasOlder: Bool) {
        let row = try connection.execute("""
            SELECT COALESCE((SELECT modified FROM blob_versions WHERE key = $1 AND seq > $2 ORDER BY seq LIMIT 1),
                            (SELECT modified FROM blobs WHERE key = $1)) AS since,
                   EXISTS (SELECT 1 FROM blob_versions WHERE key = $1 AND seq < $2) AS older
            """, [.bytes(key.bytes), .int(seq)]).rows.first
        return (row?.int("since"), row?.bool("older") != false)
    }

    // MARK: Bookkeeping

    public func addGarbage(_ version: String) {
        garbage.append(version)
    }

    public func insertEvents(_ draft: EventDraft, facts: [EventFacts]?, for record: BlobRecord) throws(PostgresError) {
        try PostgresBlobIndex.insertEvents(draft, facts: facts ?? draft.facts(for: record, millis: index.clock.milliseconds),
                                           for: record, in: connection)
    }

    // MARK: Concurrency

    public func lockKey(_ key: BlobKey) throws(PostgresError) {
        try connection.execute("SELECT pg_advisory_xact_lock(hashtextextended(encode($1::bytea, 'hex'), 25))", [.bytes(key.bytes)])
    }

    public func tryLockKey(_ key: BlobKey) throws(PostgresError) -> Bool {
        try connection.execute("SELECT pg_try_advisory_xact_lock(hashtextextended(encode($1::bytea, 'hex'), 25)) AS locked",
                               [.bytes(key.bytes)]).rows.first?.bool("locked") == true
    }

    /// The expiry sweeps' transaction-level advisory lock.
    public func claimSweep() throws(PostgresError) -> Bool {
        try connection.execute("SELECT pg_try_advisory_xact_lock(\(PostgresSchema.expiryLock)) AS locked").rows.first?.bool("locked") == true
    }

    // MARK: Rows

    static let selectVersion = "SELECT seq, \(VersionRow.columns), delete_marker FROM blob_versions"

    private static func versionRow(from row: PostgresRow) -> VersionRow? {
        guard let seq = row.int("seq"), let version = PostgresBlobIndex.version(from: row) else { return nil }
        return VersionRow(seq: seq, version: version)
    }
}

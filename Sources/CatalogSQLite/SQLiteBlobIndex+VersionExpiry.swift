import BlobCatalog
import BlobCore
import Foundation
import GRDB

/// The index in SQLite: the lifecycle sweep of noncurrent versions and expired delete markers,
/// through `blob_versions_by_sweep` (see `DueVersion`).
extension SQLiteBlobIndex {
    public func removeExpiredVersions(now: Int64, limit: Int, deadline: (DueVersion) -> Int64?,
                                      events: (BlobVersion) -> EventDraft?) throws(StoreError) -> VersionExpirySweep {
        try write { db in
            // The one writer: no other sweep, and no other change of a key's versions, meanwhile.
            let rows = try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM blob_versions WHERE sweep_at <= ? ORDER BY sweep_at LIMIT ?"),
                                        arguments: [now, limit])
            var sweep = VersionExpirySweep(examined: rows.count)
            for row in rows {
                let seq: Int64 = row["seq"]
                guard let found = Self.version(from: row) else {
                    try Self.stampSweep(seq, at: nil, in: db)  // a row blobd cannot name: no longer found
                    continue
                }
                let due = try Self.due(found, seq: seq, in: db)
                switch due.decision(deadline: deadline(due), now: now) {
                case .stamp(let next):
                    try Self.stampSweep(seq, at: next, in: db)
                case .remove:
                    try db.cachedStatement(sql: "DELETE FROM blob_versions WHERE seq = ?").execute(arguments: [seq])
                    if !found.deleteMarker {
                        try Self.addGarbage(found.record.version, in: db)
                        sweep.garbage.append(found.record.version)
                    }
                    if let draft = events(due.version) { try insertEvents(draft, for: found.record, in: db) }
                    try Self.stampIfLoneMarker(found.record.key, at: now, in: db)
                    sweep.removed.append(due.version)
                }
            }
            return sweep
        }
    }

    public func reviewVersions(prefix: [UInt8], after cursor: VersionRowCursor?, limit: Int,
                               at time: Int64) throws(StoreError) -> VersionRowCursor? {
        try write { db in
            var sql = "SELECT key, seq FROM blob_versions WHERE key >= ?"
            var arguments: StatementArguments = [Data(prefix)]
            if let upper = prefixUpperBound(of: prefix) {
                sql += " AND key < ?"
                arguments += [Data(upper)]
            }
            if let cursor {
                sql += " AND (key, seq) > (?, ?)"
                arguments += [Data(cursor.key), cursor.seq]
            }
            let rows = try Row.fetchAll(db, sql: sql + " ORDER BY key, seq LIMIT ?", arguments: arguments + [limit])
            for row in rows { try Self.stampSweep(row["seq"], at: time, in: db) }
            guard rows.count == limit, let last = rows.last else { return nil }
            return VersionRowCursor(key: Array(last["key"] as Data), seq: last["seq"])
        }
    }

    /// The query plan of the version sweep's selection (the tests check it reads `blob_versions_by_sweep`).
    public func versionSweepPlan() throws(StoreError) -> String {
        try run {
            try pool.read { db in
                try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN SELECT * FROM blob_versions WHERE sweep_at <= ? ORDER BY sweep_at LIMIT ?",
                                 arguments: [0, 1]).map { $0["detail"] as String? ?? "" }.joined(separator: "\n")
            }
        }
    }

    /// `found` (row `seq`) as the sweep decides it: when it stopped being current (the time of
    /// the next newer version of its key, or of the current record), and whether it is a delete
    /// marker left alone.
    private static func due(_ found: BlobVersion, seq: Int64, in db: Database) throws -> DueVersion {
        let key = Data(found.record.key.bytes)
        let newer = try Int64.fetchOne(db.cachedStatement(sql: "SELECT modified FROM blob_versions WHERE key = ? AND seq > ? ORDER BY seq LIMIT 1"),
                                       arguments: [key, seq])
        let since = try newer ?? Int64.fetchOne(db.cachedStatement(sql: "SELECT modified FROM blobs WHERE key = ?"), arguments: [key])
        var version = found
        version.latest = since == nil
        var lone = false
        if since == nil && found.deleteMarker {
            lone = try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM blob_versions WHERE key = ? AND seq < ?)"),
                                     arguments: [key, seq]) == false
        }
        return DueVersion(version: version, noncurrentSince: since, lone: lone)
    }

    private static func stampSweep(_ seq: Int64, at time: Int64?, in db: Database) throws {
        try db.cachedStatement(sql: "UPDATE blob_versions SET sweep_at = ? WHERE seq = ?").execute(arguments: [time, seq])
    }
}

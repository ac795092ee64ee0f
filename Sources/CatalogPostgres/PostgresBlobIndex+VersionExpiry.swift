import BlobCatalog
import BlobCore
import Foundation
import PostgresClient

/// The index in PostgreSQL: the lifecycle sweep of noncurrent versions and expired delete
/// markers, through `blob_versions_by_sweep` (see `DueVersion`).
extension PostgresBlobIndex {
    /// One node sweeps at a time (the expiry sweep's advisory lock; the others are `skipped`);
    /// rows are locked as they are read (`SKIP LOCKED`), and each key's versions under the key's
    /// lock, which a key another transaction holds skips until a later batch.
    public func removeExpiredVersions(now: Int64, limit: Int, deadline: (DueVersion) -> Int64?,
                                      events: (BlobVersion) -> EventDraft?) throws(StoreError) -> VersionExpirySweep {
        try run { () throws(PostgresError) in
            try pool.transaction { connection throws(PostgresError) in
                guard try connection.execute("SELECT pg_try_advisory_xact_lock(\(PostgresSchema.expiryLock)) AS locked")
                    .rows.first?.bool("locked") == true else { return VersionExpirySweep(skipped: true) }
                let rows = try connection.execute(Self.selectVersion + """
                     WHERE sweep_at <= $1 ORDER BY sweep_at LIMIT $2 FOR UPDATE SKIP LOCKED
                    """, [.int(now), .int(Int64(limit))]).rows
                var sweep = VersionExpirySweep(examined: rows.count)
                for row in rows {
                    guard let seq = row.int("seq") else { continue }
                    guard let found = Self.version(from: row) else {
                        try Self.stampSweep(seq, at: nil, in: connection)  // a row blobd cannot name: no longer found
                        continue
                    }
                    guard try Self.tryLock(found.record.key, in: connection) else { continue }
                    let due = try Self.due(found, seq: seq, in: connection)
                    switch due.decision(deadline: deadline(due), now: now) {
                    case .stamp(let next):
                        try Self.stampSweep(seq, at: next, in: connection)
                    case .remove:
                        try connection.execute("DELETE FROM blob_versions WHERE seq = $1", [.int(seq)])
                        if !found.deleteMarker { sweep.garbage.append(found.record.version) }
                        if let draft = events(due.version) { try Self.insertEvents(draft, for: found.record, in: connection) }
                        try Self.stampIfLoneMarker(found.record.key, at: now, in: connection)
                        sweep.removed.append(due.version)
                    }
                }
                try Self.addGarbage(sweep.garbage, in: connection)
                return sweep
            }
        }
    }

    public func reviewVersions(prefix: [UInt8], after cursor: VersionRowCursor?, limit: Int,
                               at time: Int64) throws(StoreError) -> VersionRowCursor? {
        try run { () throws(PostgresError) in try pool.transaction { connection throws(PostgresError) -> VersionRowCursor? in
            let upper = prefixUpperBound(of: prefix)
            let rows = try connection.execute("""
                UPDATE blob_versions SET sweep_at = $5 WHERE seq IN (
                    SELECT seq FROM blob_versions WHERE key >= $1 AND ($2::bytea IS NULL OR key < $2)
                    AND ($3::bytea IS NULL OR (key, seq) > ($3, $4)) ORDER BY key, seq LIMIT $6)
                RETURNING key, seq
                """, [.bytes(prefix), upper.map { .bytes($0) } ?? .null, cursor.map { .bytes($0.key) } ?? .null,
                      .int(cursor?.seq ?? 0), .int(time), .int(Int64(limit))]).rows
            guard rows.count == limit else { return nil }
            // RETURNING names the rows in no order: go on from the greatest.
            let last = rows.compactMap { row in row.bytes("key").flatMap { key in row.int("seq").map { (key, $0) } } }
                .max { a, b in a.0 == b.0 ? a.1 < b.1 : a.0.lexicographicallyPrecedes(b.0) }
            return last.map { VersionRowCursor(key: $0.0, seq: $0.1) }
        } }
    }

    /// The query plan of the version sweep's selection, with sequential scans priced out: the
    /// tests check it can read `blob_versions_by_sweep`.
    public func versionSweepPlan() throws(StoreError) -> String {
        try run { () throws(PostgresError) in
            try pool.transaction { connection throws(PostgresError) in
                try connection.simple("SET LOCAL enable_seqscan = off")
                return try connection.execute("EXPLAIN SELECT seq FROM blob_versions WHERE sweep_at <= $1 ORDER BY sweep_at LIMIT $2",
                                              [.int(0), .int(1)]).rows.compactMap { $0.text("QUERY PLAN") }.joined(separator: "\n")
            }
        }
    }

    /// `found` (row `seq`) as the sweep decides it: when it stopped being current (the time of
    /// the next newer version of its key, or of the current record), and whether it is a delete
    /// marker left alone.
    private static func due(_ found: BlobVersion, seq: Int64, in connection: PostgresConnection) throws(PostgresError) -> DueVersion {
        let key: PostgresValue = .bytes(found.record.key.bytes)
        let row = try connection.execute("""
            SELECT COALESCE((SELECT modified FROM blob_versions WHERE key = $1 AND seq > $2 ORDER BY seq LIMIT 1),
                            (SELECT modified FROM blobs WHERE key = $1)) AS since,
                   EXISTS (SELECT 1 FROM blob_versions WHERE key = $1 AND seq < $2) AS older
            """, [key, .int(seq)]).rows.first
        let since = row?.int("since")
        var version = found
        version.latest = since == nil
        let lone = since == nil && found.deleteMarker && row?.bool("older") == false
        return DueVersion(version: version, noncurrentSince: since, lone: lone)
    }

    private static func stampSweep(_ seq: Int64, at time: Int64?, in connection: PostgresConnection) throws(PostgresError) {
        try connection.execute("UPDATE blob_versions SET sweep_at = $1 WHERE seq = $2", [time.map { .int($0) } ?? .null, .int(seq)])
    }
}

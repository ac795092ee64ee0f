import BlobCatalog
import BlobCore
import Foundation
import PostgresClient

/// The index in PostgreSQL: the lifecycle sweep of noncurrent versions and expired delete
/// markers, through `blob_versions_by_sweep` (see `DueVersion`).
extension PostgresBlobIndex {
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
}

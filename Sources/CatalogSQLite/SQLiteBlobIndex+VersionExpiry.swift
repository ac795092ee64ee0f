import BlobCatalog
import BlobCore
import Foundation
import GRDB

/// The index in SQLite: the lifecycle sweep of noncurrent versions and expired delete markers,
/// through `blob_versions_by_sweep` (see `DueVersion`).
extension SQLiteBlobIndex {
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
            for row in rows { try SQLiteCatalogTransaction(db: db, index: self).setSweep(ofRow: row["seq"], to: time) }
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
}

import BlobCatalog
import BlobCore
import Foundation
import PostgresClient

/// The index in PostgreSQL: garbage awaiting reclaim, and the versions and totals that recovery
/// and fsck read.
extension PostgresBlobIndex {
    // MARK: Garbage (deferred reclaim)

    /// Every version waiting to be reclaimed, whatever its age.
    public func garbage() throws(StoreError) -> [String] {
        try run { () throws(PostgresError) in
            try pool.withConnection { connection throws(PostgresError) in
                try connection.execute("SELECT version FROM garbage").rows.compactMap { $0.text("version") }
            }
        }
    }

    /// Versions replaced or removed at least `grace` seconds ago, up to `limit`, if this node
    /// holds the cluster's reclaim lock (a transaction-level advisory lock); `remove` unlinks
    /// each file, after which its row goes. Returns how many were reclaimed; 0 when another
    /// node is reclaiming.
    public func reclaim(olderThan grace: Int64, limit: Int, remove: (String) -> Void) throws(StoreError) -> Int {
        try run { () throws(PostgresError) in
            try pool.transaction { connection throws(PostgresError) in
                guard try connection.execute("SELECT pg_try_advisory_xact_lock(\(PostgresSchema.reclaimLock)) AS locked")
                    .rows.first?.bool("locked") == true else { return 0 }
                let due = try connection.execute("""
                    SELECT version FROM garbage WHERE since <= $1 AND NOT EXISTS (SELECT 1 FROM blobs WHERE blobs.version = garbage.version)
                    ORDER BY since LIMIT $2
                    """, [.int(clock.seconds - grace), .int(Int64(limit))]).rows.compactMap { $0.text("version") }
                for version in due {
                    remove(version)
                    try connection.execute("DELETE FROM garbage WHERE version = $1", [.text(version)])
                }
                return due.count
            }
        }
    }

    /// True if `version` was replaced or deleted and waits out its grace period.
    public func isGarbage(_ version: String) throws(StoreError) -> Bool {
        try exists("SELECT EXISTS (SELECT 1 FROM garbage WHERE version = $1) AS found", [.text(version)])
    }

    // MARK: Versions, totals

    public func containsVersion(_ version: String) throws(StoreError) -> Bool {
        try exists("SELECT (EXISTS (SELECT 1 FROM blobs WHERE version = $1) "
                   + "OR EXISTS (SELECT 1 FROM blob_versions WHERE version = $1 AND NOT delete_marker)) AS found", [.text(version)])
    }

    public func unfinishedUploads() throws(StoreError) -> [String] {
        try texts("SELECT id FROM uploads WHERE completed_key IS NULL", [], column: "id")
    }

    public func allVersions() throws(StoreError) -> Set<String> {
        Set(try texts("SELECT version FROM blobs UNION ALL SELECT version FROM blob_versions WHERE NOT delete_marker", [],
                      column: "version"))
    }

    public func versions(inFolder folder: String) throws(StoreError) -> Set<String> {
        // Compared in C (byte) order, as blobs_by_version is built: under a locale's collation
        // the bound "…:" after folder "…9" sorts before digits, and the range came out empty.
        let upper = String(decoding: prefixUpperBound(of: Array(folder.utf8)) ?? [0xFF], as: UTF8.self)
        return Set(try texts("SELECT version FROM blobs WHERE version COLLATE \"C\" >= $1 AND version COLLATE \"C\" < $2 UNION ALL "
                             + "SELECT version FROM blob_versions WHERE version COLLATE \"C\" >= $1 AND version COLLATE \"C\" < $2 "
                             + "AND NOT delete_marker", [.text(folder), .text(upper)], column: "version"))
    }

    public func totals() throws(StoreError) -> (count: Int, bytes: UInt64) {
        try run { () throws(PostgresError) in
            try pool.withConnection { connection throws(PostgresError) in
                let row = try connection.execute("SELECT count(*) AS count, coalesce(sum(size), 0)::bigint AS bytes FROM blobs").rows.first
                return (Int(row?.int("count") ?? 0), UInt64(max(0, row?.int("bytes") ?? 0)))
            }
        }
    }
}

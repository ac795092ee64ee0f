import BlobCatalog
import BlobCore
import Foundation
import GRDB

/// The index in SQLite: garbage awaiting reclaim, and the versions and totals that recovery and
/// fsck read.
extension SQLiteBlobIndex {
    public func garbage() throws(StoreError) -> [String] {
        try run { try pool.read { db in try String.fetchAll(db, sql: "SELECT version FROM garbage") } }
    }

    public func collectedGarbage(_ version: String) {
        collected.withLock { $0.append(version) }
    }

    public func clearGarbage() throws(StoreError) {
        collected.withLock { $0.removeAll() }
        try run { try pool.write { db in try db.execute(sql: "DELETE FROM garbage") } }
    }

    static func addGarbage(_ version: String, in db: Database) throws {
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO garbage (version) VALUES (?)").execute(arguments: [version])
    }

    static func pruneGarbage(_ versions: [String], in db: Database) throws {
        for version in versions {
            try db.cachedStatement(sql: "DELETE FROM garbage WHERE version = ?").execute(arguments: [version])
        }
    }

    public func containsVersion(_ version: String) throws(StoreError) -> Bool {
        try run {
            try pool.read { db in
                try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM blobs WHERE version = ?) "
                                   + "OR EXISTS (SELECT 1 FROM blob_versions WHERE version = ? AND delete_marker = 0)",
                                   arguments: [version, version]) ?? false
            }
        }
    }

    public func unfinishedUploads() throws(StoreError) -> [String] {
        try run { try pool.read { db in try String.fetchAll(db, sql: "SELECT id FROM uploads WHERE completed_key IS NULL") } }
    }

    public func allVersions() throws(StoreError) -> Set<String> {
        try run { try pool.read { db in Set(try String.fetchAll(db, sql: "SELECT version FROM blobs UNION ALL "
                                                                   + "SELECT version FROM blob_versions WHERE delete_marker = 0")) } }
    }

    public func versions(inFolder folder: String) throws(StoreError) -> Set<String> {
        // A range on blobs_by_version: the folder's versions, not a scan of the table.
        let upper = String(decoding: prefixUpperBound(of: Array(folder.utf8)) ?? [0xFF], as: UTF8.self)
        return try run {
            try pool.read { db in
                Set(try String.fetchAll(db, sql: "SELECT version FROM blobs WHERE version >= ? AND version < ? UNION ALL "
                                        + "SELECT version FROM blob_versions WHERE version >= ? AND version < ? AND delete_marker = 0",
                                        arguments: [folder, upper, folder, upper]))
            }
        }
    }

    public func totals() throws(StoreError) -> (count: Int, bytes: UInt64) {
        try run {
            try pool.read { db in
                let row = try Row.fetchOne(db, sql: "SELECT count(*), coalesce(sum(size), 0) FROM blobs")
                return (row?[0] ?? 0, UInt64(row?[1] as Int64? ?? 0))
            }
        }
    }
}

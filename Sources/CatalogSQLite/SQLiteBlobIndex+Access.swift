import BlobCatalog
import BlobCore
import BucketSettings
import Foundation
import GRDB

/// The index in SQLite: keys, share links and anonymous grants (`AccessIndex`).
extension SQLiteBlobIndex: AccessIndex {
    public func accessVersion() throws(StoreError) -> Int64 {
        try run { try pool.read { db in try Int64.fetchOne(db, sql: "SELECT version FROM access_version WHERE id = 1") ?? 0 } }
    }

    public func keys() throws(StoreError) -> [KeyRecord] {
        try run {
            try pool.read { db in
                try Row.fetchAll(db, sql: "SELECT \(SQLiteAccessRow.keyColumns) FROM access_keys ORDER BY created, id")
                    .compactMap(SQLiteAccessRow.key(from:))
            }
        }
    }

    public func insertKey(_ key: KeyRecord) throws(StoreError) {
        let result: Result<Void, StoreError> = try write { db in
            if let taken = try Self.conflict(with: key, in: db) { return .failure(.keyConflict(taken)) }
            try db.execute(sql: SQLiteAccessRow.insertKey, arguments: SQLiteAccessRow.arguments(key))
            try db.execute(sql: SQLiteAccessRow.bumpVersion)
            return .success(())
        }
        try result.get()
    }

    /// Which unique column of another key `key` would take: `id`, `token` or `access key id`.
    private static func conflict(with key: KeyRecord, in db: Database) throws -> String? {
        let row = try Row.fetchOne(db, sql: "SELECT id, token_hash, access_key_id FROM access_keys WHERE id = ? OR token_hash = ? OR access_key_id = ?",
                                   arguments: [key.id, Data(key.tokenHash), key.accessKeyID])
        guard let row else { return nil }
        if (row["id"] as String) == key.id { return "id" }
        return [UInt8](row["token_hash"] as Data) == key.tokenHash ? "token" : "access key id"
    }

    public func replaceGrants(ofKey id: String, with grants: Grants) throws(StoreError) -> KeyRecord {
        let result: Result<KeyRecord, StoreError> = try write { db in
            try db.execute(sql: "UPDATE access_keys SET grants = ? WHERE id = ?", arguments: [grants.description, id])
            guard db.changesCount > 0,
                  let row = try Row.fetchOne(db, sql: "SELECT \(SQLiteAccessRow.keyColumns) FROM access_keys WHERE id = ?", arguments: [id]),
                  let key = SQLiteAccessRow.key(from: row) else { return .failure(.keyNotFound) }
            try db.execute(sql: SQLiteAccessRow.bumpVersion)
            return .success(key)
        }
        return try result.get()
    }

    public func revokeKey(_ id: String) throws(StoreError) {
        let result: Result<Void, StoreError> = try write { db in
            try db.execute(sql: "DELETE FROM access_keys WHERE id = ?", arguments: [id])
            guard db.changesCount > 0 else { return .failure(.keyNotFound) }
            try db.execute(sql: "DELETE FROM shares WHERE creator = ?", arguments: ["key:" + id])
            try db.execute(sql: SQLiteAccessRow.bumpVersion)
            return .success(())
        }
        try result.get()
    }

    public func anonymousGrants() throws(StoreError) -> Grants {
        let text = try run {
            try pool.read { db in try String.fetchOne(db, sql: "SELECT value FROM access_settings WHERE name = 'anonymous'") }
        }
        return (try? Grants(parsing: text ?? "")) ?? .none
    }

    public func applyBootstrap(_ plan: BootstrapPlan) throws(StoreError) {
        let result: Result<Void, StoreError> = try write { db in
            // Checked before anything is written: a refused plan leaves no trace.
            for key in plan.keys {
                // Another key (not this bootstrap key's earlier self) holding its token or access key id.
                let other = try Row.fetchOne(db, sql: "SELECT id FROM access_keys WHERE id != ? AND (token_hash = ? OR access_key_id = ?)",
                                             arguments: [key.id, Data(key.tokenHash), key.accessKeyID])
                if other != nil { return .failure(.keyConflict("token or access key id (bootstrap key '\(key.name)')")) }
            }
            for bucket in plan.buckets {
                try db.execute(sql: "INSERT OR IGNORE INTO buckets (name, created, region) VALUES (?, ?, ?)",
                               arguments: [bucket.name, bucket.created, bucket.region])
            }
            for key in plan.keys {
                try db.execute(sql: SQLiteAccessRow.upsertKey, arguments: SQLiteAccessRow.arguments(key))
            }
            for setting in plan.settings {
                try db.execute(sql: """
                    INSERT INTO bucket_access (bucket, name, value) VALUES (?, ?, ?)
                    ON CONFLICT (bucket, name) DO UPDATE SET value = excluded.value
                    """, arguments: [setting.bucket, setting.name.stored, setting.value])
            }
            try db.execute(sql: "INSERT INTO access_settings (name, value) VALUES ('anonymous', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                           arguments: [plan.anonymous.description])
            try db.execute(sql: SQLiteAccessRow.bumpVersion)
            return .success(())
        }
        try result.get()
        knownBuckets.withLock { $0.generation += 1 }
    }

    public func insertShare(_ share: ShareRecord) throws(StoreError) {
        try write { db in try db.execute(sql: SQLiteAccessRow.insertShare, arguments: SQLiteAccessRow.arguments(share)) }
    }

    public func share(_ id: String) throws(StoreError) -> ShareRecord? {
        try run {
            try pool.read { db in
                try Row.fetchOne(db, sql: "SELECT \(SQLiteAccessRow.shareColumns) FROM shares WHERE id = ?", arguments: [id])
                    .flatMap(SQLiteAccessRow.share(from:))
            }
        }
    }

    public func shares(createdBy creator: String) throws(StoreError) -> [ShareRecord] {
        try run {
            try pool.read { db in
                try Row.fetchAll(db, sql: "SELECT \(SQLiteAccessRow.shareColumns) FROM shares WHERE creator = ? ORDER BY created, id",
                                 arguments: [creator]).compactMap(SQLiteAccessRow.share(from:))
            }
        }
    }

    public func removeShare(_ id: String) throws(StoreError) {
        let removed = try write { db in
            try db.execute(sql: "DELETE FROM shares WHERE id = ?", arguments: [id])
            return db.changesCount > 0
        }
        if !removed { throw .shareNotFound }
    }

    public func countDownload(_ id: String) throws(StoreError) -> Bool {
        try write { db in
            try db.execute(sql: "UPDATE shares SET downloads = downloads + 1 WHERE id = ? AND (max_downloads IS NULL OR downloads < max_downloads)",
                           arguments: [id])
            return db.changesCount > 0
        }
    }

    // MARK: Export (migrate-index)

    /// Up to `limit` keys (made at run time or by a bootstrap file) whose id sorts after
    /// `after`, in id order, and the last row's id (nil when there are no more rows; a row whose
    /// grants no longer parse is skipped but still counts). A revoked key is no longer a row.
    public func exportKeys(after: String, limit: Int) throws(StoreError) -> (keys: [KeyRecord], last: String?) {
        try run {
            try pool.read { db in
                let rows = try Row.fetchAll(db, sql: "SELECT \(SQLiteAccessRow.keyColumns) FROM access_keys WHERE id > ? ORDER BY id LIMIT ?",
                                            arguments: [after, limit])
                return (rows.compactMap(SQLiteAccessRow.key(from:)), rows.last.map { $0["id"] })
            }
        }
    }

    /// Up to `limit` share links whose id sorts after `after`, in id order, with their download
    /// counts, and the last row's id (nil when there are no more rows).
    public func exportShares(after: String, limit: Int) throws(StoreError) -> (shares: [ShareRecord], last: String?) {
        try run {
            try pool.read { db in
                let rows = try Row.fetchAll(db, sql: "SELECT \(SQLiteAccessRow.shareColumns) FROM shares WHERE id > ? ORDER BY id LIMIT ?",
                                            arguments: [after, limit])
                return (rows.compactMap(SQLiteAccessRow.share(from:)), rows.last.map { $0["id"] })
            }
        }
    }

    /// Every access setting not tied to a bucket, by name and stored value: today the anonymous
    /// grants a bootstrap file set (`anonymous`).
    public func exportAccessSettings() throws(StoreError) -> [(name: String, value: String)] {
        try run {
            try pool.read { db in
                try Row.fetchAll(db, sql: "SELECT name, value FROM access_settings ORDER BY name").map { ($0["name"], $0["value"]) }
            }
        }
    }
}

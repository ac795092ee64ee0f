import BlobCatalog
import BlobCore
import BucketSettings
import GRDB

/// The index in SQLite: the buckets' access settings (canned ACLs and policies), part of the
/// access state that every change of bumps the access version.
extension SQLiteBlobIndex {
    static let bucketAccessSchema = """
        CREATE TABLE bucket_access (
            bucket TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (bucket, name)
        ) WITHOUT ROWID;
        """

    public func bucketAccess() throws(StoreError) -> [BucketAccessSetting] {
        try run {
            try pool.read { db in
                try Row.fetchAll(db, sql: "SELECT bucket, name, value FROM bucket_access ORDER BY bucket, name")
                    .compactMap(Self.setting(from:))
            }
        }
    }

    public func bucketAccess(of bucket: String) throws(StoreError) -> [BucketAccessSetting] {
        try run {
            try pool.read { db in
                try Row.fetchAll(db, sql: "SELECT bucket, name, value FROM bucket_access WHERE bucket = ? ORDER BY name",
                                 arguments: [bucket]).compactMap(Self.setting(from:))
            }
        }
    }

    public func setBucketAccess(_ bucket: String, _ name: BucketAccessSetting.Name, to value: String?) throws(StoreError) {
        let result: Result<Void, StoreError> = try write { db in
            guard try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM buckets WHERE name = ?)", arguments: [bucket]) == true else {
                return .failure(.bucketNotFound)
            }
            if let value {
                try db.execute(sql: """
                    INSERT INTO bucket_access (bucket, name, value) VALUES (?, ?, ?)
                    ON CONFLICT (bucket, name) DO UPDATE SET value = excluded.value
                    """, arguments: [bucket, name.stored, value])
            } else {
                try db.execute(sql: "DELETE FROM bucket_access WHERE bucket = ? AND name = ?", arguments: [bucket, name.stored])
            }
            try db.execute(sql: SQLiteAccessRow.bumpVersion)
            return .success(())
        }
        try result.get()
    }

    /// Removes a bucket's access settings, in the transaction that removes the bucket; bumps
    /// the access version if there were any.
    static func dropBucketAccess(_ bucket: String, in db: Database) throws {
        try db.execute(sql: "DELETE FROM bucket_access WHERE bucket = ?", arguments: [bucket])
        if db.changesCount > 0 { try db.execute(sql: SQLiteAccessRow.bumpVersion) }
    }

    private static func setting(from row: Row) -> BucketAccessSetting? {
        guard let name = BucketAccessSetting.Name(stored: row["name"]) else { return nil }
        return BucketAccessSetting(bucket: row["bucket"], name: name, value: row["value"])
    }
}

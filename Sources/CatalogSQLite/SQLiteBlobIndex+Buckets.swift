import BlobCatalog
import BlobCore
import BucketSettings
import Foundation
import GRDB

/// The index in SQLite: S3 buckets.
extension SQLiteBlobIndex {
    // MARK: Buckets (S3)

    public func createBucket(_ bucket: Bucket, settings: [BucketAccessSetting]) throws(StoreError) -> Bool {
        try write { db in
            try db.execute(sql: "INSERT OR IGNORE INTO buckets (name, created, region) VALUES (?, ?, ?)",
                           arguments: [bucket.name, bucket.created, bucket.region])
            guard db.changesCount > 0 else { return false }
            for setting in settings {
                try db.execute(sql: "INSERT INTO bucket_access (bucket, name, value) VALUES (?, ?, ?)",
                               arguments: [bucket.name, setting.name.stored, setting.value])
            }
            if !settings.isEmpty { try db.execute(sql: SQLiteAccessRow.bumpVersion) }
            return true
        }
    }

    public func bucket(_ name: String) throws(StoreError) -> Bucket? {
        let (known, generation) = knownBuckets.withLock { ($0.names[name], $0.generation) }
        if let known { return known }
        let found = try run {
            try pool.read { db in
                try Row.fetchOne(db, sql: "SELECT name, created, region FROM buckets WHERE name = ?", arguments: [name]).map(Self.bucket(from:))
            }
        }
        if let found {
            // Not if a removal ended meanwhile: what was read may be gone.
            knownBuckets.withLock { if $0.generation == generation { $0.names[name] = found } }
        }
        return found
    }

    public func buckets() throws(StoreError) -> [Bucket] {
        try run {
            try pool.read { db in
                try Row.fetchAll(db, sql: "SELECT name, created, region FROM buckets ORDER BY name").map(Self.bucket(from:))
            }
        }
    }

    static func bucket(from row: Row) -> Bucket {
        Bucket(name: row["name"], created: row["created"], region: row["region"])
    }

    public func removeBucket(_ name: String) throws(StoreError) {
        let prefix = Array((name + "/").utf8)
        let upper = prefixUpperBound(of: prefix) ?? [0xFF]
        let result: Result<Void, StoreError> = try write { db in
            guard try Int64.fetchOne(db, sql: "SELECT created FROM buckets WHERE name = ?", arguments: [name]) != nil else {
                return .failure(.bucketNotFound)
            }
            // Noncurrent versions and delete markers keep a bucket too, as in S3.
            let used = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM blobs WHERE key >= ? AND key < ?) "
                                         + "OR EXISTS (SELECT 1 FROM blob_versions WHERE key >= ? AND key < ?)",
                                         arguments: [Data(prefix), Data(upper), Data(prefix), Data(upper)]) ?? false
            guard !used else { return .failure(.bucketNotEmpty) }
            try db.execute(sql: "DELETE FROM buckets WHERE name = ?", arguments: [name])
            try Self.dropBucketAccess(name, in: db)
            return .success(())
        }
        try result.get()
        knownBuckets.withLock {
            $0.names[name] = nil
            $0.generation += 1
        }
    }
}

import BlobCatalog
import BlobCore
import BucketSettings
import Foundation
import PostgresClient

/// The index in PostgreSQL: S3 buckets.
extension PostgresBlobIndex {
    // MARK: Buckets (S3)

    public func createBucket(_ bucket: Bucket, settings: [BucketAccessSetting]) throws(StoreError) -> Bool {
        try run { () throws(PostgresError) in
            try pool.transaction { connection throws(PostgresError) in
                guard try connection.execute("INSERT INTO buckets (name, created, region) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING",
                                             [.text(bucket.name), .int(bucket.created), Self.optional(bucket.region)]).affected > 0 else {
                    return false
                }
                for setting in settings {
                    try connection.execute("INSERT INTO bucket_access (bucket, name, value) VALUES ($1, $2, $3)",
                                           [.text(bucket.name), .text(setting.name.stored), .text(setting.value)])
                }
                if !settings.isEmpty { try connection.execute(PostgresAccessRow.bumpVersion) }
                return true
            }
        }
    }

    public func bucket(_ name: String) throws(StoreError) -> Bucket? {
        try run { () throws(PostgresError) in
            try pool.withConnection { connection throws(PostgresError) in
                try connection.execute("SELECT name, created, region FROM buckets WHERE name = $1", [.text(name)]).rows.first
                    .map(Self.bucket(from:))
            }
        }
    }

    public func buckets() throws(StoreError) -> [Bucket] {
        try run { () throws(PostgresError) in
            try pool.withConnection { connection throws(PostgresError) in
                try connection.execute("SELECT name, created, region FROM buckets ORDER BY name COLLATE \"C\"").rows.map(Self.bucket(from:))
            }
        }
    }

    static func bucket(from row: PostgresRow) -> Bucket {
        Bucket(name: row.text("name") ?? "", created: row.int("created") ?? 0, region: row.text("region"))
    }

    public func removeBucket(_ name: String) throws(StoreError) {
        let prefix = Array((name + "/").utf8)
        let upper = prefixUpperBound(of: prefix) ?? [0xFF]
        let result: Result<Void, StoreError> = try run { () throws(PostgresError) in
            try pool.transaction { connection throws(PostgresError) in
                guard try connection.execute("SELECT created FROM buckets WHERE name = $1 FOR UPDATE", [.text(name)]).count > 0 else {
                    return .failure(.bucketNotFound)
                }
                // Noncurrent versions and delete markers keep a bucket too, as in S3.
                let used = try connection.execute("SELECT (EXISTS (SELECT 1 FROM blobs WHERE key >= $1 AND key < $2) "
                                                  + "OR EXISTS (SELECT 1 FROM blob_versions WHERE key >= $1 AND key < $2)) AS found",
                                                  [.bytes(prefix), .bytes(upper)]).rows.first?.bool("found") ?? false
                guard !used else { return .failure(.bucketNotEmpty) }
                try connection.execute("DELETE FROM buckets WHERE name = $1", [.text(name)])
                try Self.dropBucketAccess(name, on: connection)
                return .success(())
            }
        }
        try result.get()
    }
}

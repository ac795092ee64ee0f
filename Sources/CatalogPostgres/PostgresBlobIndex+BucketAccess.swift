import BlobCatalog
import BlobCore
import BucketSettings
import PostgresClient

/// The index in PostgreSQL: the buckets' access settings (canned ACLs and policies), part of the
/// access state that every change of bumps the access version, which every node polls.
extension PostgresBlobIndex {
    static let bucketAccessSchema = """
        CREATE TABLE bucket_access (
            bucket text NOT NULL, name text NOT NULL, value text NOT NULL, PRIMARY KEY (bucket, name)
        );
        """

    public func bucketAccess() throws(StoreError) -> [BucketAccessSetting] {
        try rows("SELECT bucket, name, value FROM bucket_access ORDER BY bucket, name", []).compactMap(Self.setting(from:))
    }

    public func bucketAccess(of bucket: String) throws(StoreError) -> [BucketAccessSetting] {
        try rows("SELECT bucket, name, value FROM bucket_access WHERE bucket = $1 ORDER BY name", [.text(bucket)])
            .compactMap(Self.setting(from:))
    }

    public func setBucketAccess(_ bucket: String, _ name: BucketAccessSetting.Name, to value: String?) throws(StoreError) {
        let result: Result<Void, StoreError> = try run { () throws(PostgresError) in
            try pool.transaction { connection throws(PostgresError) in
                // FOR SHARE: a removal of the bucket (FOR UPDATE) waits, or this sees it gone.
                guard try connection.execute("SELECT created FROM buckets WHERE name = $1 FOR SHARE", [.text(bucket)]).count > 0 else {
                    return .failure(.bucketNotFound)
                }
                if let value {
                    try connection.execute("""
                        INSERT INTO bucket_access (bucket, name, value) VALUES ($1, $2, $3)
                        ON CONFLICT (bucket, name) DO UPDATE SET value = excluded.value
                        """, [.text(bucket), .text(name.stored), .text(value)])
                } else {
                    try connection.execute("DELETE FROM bucket_access WHERE bucket = $1 AND name = $2",
                                           [.text(bucket), .text(name.stored)])
                }
                try connection.execute(PostgresAccessRow.bumpVersion)
                return .success(())
            }
        }
        try result.get()
    }

    /// Removes a bucket's access settings, in the transaction that removes the bucket; bumps
    /// the access version if there were any.
    static func dropBucketAccess(_ bucket: String, on connection: PostgresConnection) throws(PostgresError) {
        if try connection.execute("DELETE FROM bucket_access WHERE bucket = $1", [.text(bucket)]).affected > 0 {
            try connection.execute(PostgresAccessRow.bumpVersion)
        }
    }

    private static func setting(from row: PostgresRow) -> BucketAccessSetting? {
        guard let bucket = row.text("bucket"), let name = row.text("name").flatMap(BucketAccessSetting.Name.init(stored:)),
              let value = row.text("value") else { return nil }
        return BucketAccessSetting(bucket: bucket, name: name, value: value)
    }
}

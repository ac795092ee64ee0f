import BlobCatalog
import BlobCore
import BucketSettings
import PostgresClient

/// The index in PostgreSQL: keys, share links and anonymous grants (`AccessIndex`), shared by
/// every node; each node polls `accessVersion` to learn of a change.
extension PostgresBlobIndex: AccessIndex {
    public func accessVersion() throws(StoreError) -> Int64 {
        try rows("SELECT version FROM access_version WHERE id = 1", []).first?.int("version") ?? 0
    }

    public func keys() throws(StoreError) -> [KeyRecord] {
        try rows("SELECT \(PostgresAccessRow.keyColumns) FROM access_keys ORDER BY created, id", []).compactMap(PostgresAccessRow.key(from:))
    }

    public func insertKey(_ key: KeyRecord) throws(StoreError) {
        let result: Result<Void, StoreError> = try transaction { connection throws(PostgresError) in
            let taken = try connection.execute(
                "SELECT id, token_hash, access_key_id FROM access_keys WHERE id = $1 OR token_hash = $2 OR access_key_id = $3",
                [.text(key.id), .bytes(key.tokenHash), .text(key.accessKeyID)]).rows.first
            if let taken {
                let which = taken.text("id") == key.id ? "id" : taken.bytes("token_hash") == key.tokenHash ? "token" : "access key id"
                return .failure(.keyConflict(which))
            }
            try connection.execute(PostgresAccessRow.insertKey, PostgresAccessRow.values(key))
            try connection.execute(PostgresAccessRow.bumpVersion)
            return .success(())
        }
        try result.get()
    }

    public func replaceGrants(ofKey id: String, with grants: Grants) throws(StoreError) -> KeyRecord {
        let result: Result<KeyRecord, StoreError> = try transaction { connection throws(PostgresError) in
            let updated = try connection.execute("UPDATE access_keys SET grants = $1 WHERE id = $2 RETURNING \(PostgresAccessRow.keyColumns)",
                                                 [.text(grants.description), .text(id)]).rows.first
            guard let key = updated.flatMap(PostgresAccessRow.key(from:)) else { return .failure(.keyNotFound) }
            try connection.execute(PostgresAccessRow.bumpVersion)
            return .success(key)
        }
        return try result.get()
    }

    public func revokeKey(_ id: String) throws(StoreError) {
        let result: Result<Void, StoreError> = try transaction { connection throws(PostgresError) in
            guard try connection.execute("DELETE FROM access_keys WHERE id = $1", [.text(id)]).affected > 0 else {
                return .failure(.keyNotFound)
            }
            try connection.execute("DELETE FROM shares WHERE creator = $1", [.text("key:" + id)])
            try connection.execute(PostgresAccessRow.bumpVersion)
            return .success(())
        }
        try result.get()
    }

    public func anonymousGrants() throws(StoreError) -> Grants {
        let text = try rows("SELECT value FROM access_settings WHERE name = 'anonymous'", []).first?.text("value")
        return (try? Grants(parsing: text ?? "")) ?? .none
    }

    public func applyBootstrap(_ plan: BootstrapPlan) throws(StoreError) {
        let result: Result<Void, StoreError> = try transaction { connection throws(PostgresError) in
            // One bootstrap at a time: nodes starting together apply it one after the other.
            try connection.simple("SELECT pg_advisory_xact_lock(\(PostgresSchema.migrationLock))")
            // Checked before anything is written: a refused plan leaves no trace.
            for key in plan.keys {
                let other = try connection.execute(
                    "SELECT id FROM access_keys WHERE id != $1 AND (token_hash = $2 OR access_key_id = $3)",
                    [.text(key.id), .bytes(key.tokenHash), .text(key.accessKeyID)]).rows.first
                if other != nil { return .failure(.keyConflict("token or access key id (bootstrap key '\(key.name)')")) }
            }
            for bucket in plan.buckets {
                try connection.execute("INSERT INTO buckets (name, created, region) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING",
                                       [.text(bucket.name), .int(bucket.created), Self.optional(bucket.region)])
            }
            for key in plan.keys {
                try connection.execute(PostgresAccessRow.upsertKey, PostgresAccessRow.values(key))
            }
            for setting in plan.settings {
                try connection.execute("""
                    INSERT INTO bucket_access (bucket, name, value) VALUES ($1, $2, $3)
                    ON CONFLICT (bucket, name) DO UPDATE SET value = excluded.value
                    """, [.text(setting.bucket), .text(setting.name.stored), .text(setting.value)])
            }
            try connection.execute("""
                INSERT INTO access_settings (name, value) VALUES ('anonymous', $1)
                ON CONFLICT (name) DO UPDATE SET value = excluded.value
                """, [.text(plan.anonymous.description)])
            try connection.execute(PostgresAccessRow.bumpVersion)
            return .success(())
        }
        try result.get()
    }

    public func insertShare(_ share: ShareRecord) throws(StoreError) {
        _ = try rows(PostgresAccessRow.insertShare, PostgresAccessRow.values(share))
    }

    public func share(_ id: String) throws(StoreError) -> ShareRecord? {
        try rows("SELECT \(PostgresAccessRow.shareColumns) FROM shares WHERE id = $1", [.text(id)]).first
            .flatMap(PostgresAccessRow.share(from:))
    }

    public func shares(createdBy creator: String) throws(StoreError) -> [ShareRecord] {
        try rows("SELECT \(PostgresAccessRow.shareColumns) FROM shares WHERE creator = $1 ORDER BY created, id", [.text(creator)])
            .compactMap(PostgresAccessRow.share(from:))
    }

    public func removeShare(_ id: String) throws(StoreError) {
        let removed = try run { () throws(PostgresError) in
            try pool.withConnection { connection throws(PostgresError) in
                try connection.execute("DELETE FROM shares WHERE id = $1", [.text(id)]).affected
            }
        }
        if removed == 0 { throw .shareNotFound }
    }

    public func countDownload(_ id: String) throws(StoreError) -> Bool {
        try run { () throws(PostgresError) in
            try pool.withConnection { connection throws(PostgresError) in
                try connection.execute("""
                    UPDATE shares SET downloads = downloads + 1
                    WHERE id = $1 AND (max_downloads IS NULL OR downloads < max_downloads)
                    """, [.text(id)]).affected > 0
            }
        }
    }

    /// A transaction whose body decides its own outcome (a domain failure commits nothing it
    /// did not write).
    private func transaction<T>(_ body: (PostgresConnection) throws(PostgresError) -> Result<T, StoreError>) throws(StoreError) -> Result<T, StoreError> {
        try run { () throws(PostgresError) in try pool.transaction(body) }
    }
}

import BlobCatalog
import BlobCore
import BucketSettings
import Foundation
import PostgresClient

/// The index in PostgreSQL: importing a single-node index (`blobd migrate-index`).
extension PostgresBlobIndex {
    // MARK: Import (migrate-index)

    /// Adds what a single-node index holds, in one transaction, keeping whatever the database
    /// has already (a migration run again after an interruption, or after the cluster wrote):
    /// every insert is `ON CONFLICT DO NOTHING`. Uploads keep their owners, so that they go on
    /// counting toward `--max-open-uploads`. Returns how many blob records were new.
    public func importBatch(records: [BlobRecord], uploads: [(upload: UploadRecord, owner: String?)] = [],
                            multipart: [(upload: MultipartUpload, owner: String?, parts: [UploadedPart])] = []) throws(StoreError) -> Int {
        try run { () throws(PostgresError) in
            try pool.transaction { connection throws(PostgresError) in
                var added = 0
                for record in records {
                    added += try connection.execute(PostgresBlobRow.insert, PostgresBlobRow.values(record)).affected
                }
                for (upload, owner) in uploads {
                    try connection.execute(PostgresUploadRow.importing, PostgresUploadRow.values(upload) + [Self.optional(owner)])
                }
                for (upload, owner, parts) in multipart {
                    try connection.execute(PostgresMultipartRow.importing, PostgresMultipartRow.values(upload) + [Self.optional(owner)])
                    for part in parts {
                        try connection.execute(PostgresMultipartRow.insertPart, PostgresMultipartRow.values(part, of: upload.id))
                    }
                }
                return added
            }
        }
    }

    /// Adds noncurrent versions and delete markers, in one transaction, each as its key's
    /// newest unless the key has a noncurrent version of that id already (a migration run
    /// again adds none twice). Given oldest first, each key's versions keep their order; each
    /// keeps its Object Lock. Returns how many were new.
    public func importVersions(_ versions: [BlobVersion]) throws(StoreError) -> Int {
        try run { () throws(PostgresError) in
            try pool.transaction { connection throws(PostgresError) in
                var added = 0
                for version in versions {
                    let record = version.record
                    let known = try connection.execute("SELECT 1 FROM blob_versions WHERE key = $1 AND version = $2",
                                                       [.bytes(record.key.bytes), .text(record.version)])
                    guard known.count == 0 else { continue }
                    // Due for the sweep now: it applies the bucket's lifecycle rules (if any) to
                    // each imported version once, and stamps the deadline it finds.
                    try connection.execute(Self.insertVersion, PostgresBlobRow.values(record)
                                           + [.text(version.deleteMarker ? "t" : "f"), .int(clock.seconds)])
                    added += 1
                }
                return added
            }
        }
    }

    private static let insertVersion = """
        INSERT INTO blob_versions (\(PostgresBlobRow.selection), delete_marker, sweep_at)
        VALUES (\((1...PostgresBlobRow.columns.count + 2).map { "$\($0)" }.joined(separator: ", ")))
        """

    /// Adds bucket settings (versioning, Object Lock, ACLs, policies, CORS, lifecycle,
    /// notifications) the database does not have for their bucket and name, in one
    /// transaction, and bumps the access version so that running nodes read them. Returns how
    /// many were new.
    public func importSettings(_ settings: [BucketAccessSetting]) throws(StoreError) -> Int {
        try run { () throws(PostgresError) in
            try pool.transaction { connection throws(PostgresError) in
                var added = 0
                for setting in settings {
                    added += try connection.execute("""
                        INSERT INTO bucket_access (bucket, name, value) VALUES ($1, $2, $3) ON CONFLICT (bucket, name) DO NOTHING
                        """, [.text(setting.bucket), .text(setting.name.stored), .text(setting.value)]).affected
                }
                if added > 0 { try connection.execute(PostgresAccessRow.bumpVersion) }
                return added
            }
        }
    }

    /// Adds events not yet delivered, in one transaction, with their ids (each event's
    /// `webhook-id` and sequencer), attempts and next attempt, unclaimed; an id the database
    /// has already is kept as it is. The id sequence moves past them, so that new events sort
    /// after. Returns how many were new.
    public func importEvents(_ events: [OutboxEvent]) throws(StoreError) -> Int {
        try run { () throws(PostgresError) in
            try pool.transaction { connection throws(PostgresError) in
                var added = 0
                for event in events {
                    added += try connection.execute("""
                        INSERT INTO events (id, target, bucket, key, event, payload, created, attempts, next_attempt)
                        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING
                        """, [.int(event.id), .text(event.target), .text(event.bucket), .bytes(event.key), .text(event.event),
                              .text(event.payload), .int(event.created), .int(Int64(event.attempts)), .int(event.nextAttempt)]).affected
                }
                try connection.execute("""
                    SELECT setval('events_id_seq', GREATEST((SELECT COALESCE(MAX(id), 1) FROM events), (SELECT last_value FROM events_id_seq)))
                    """)
                return added
            }
        }
    }
}

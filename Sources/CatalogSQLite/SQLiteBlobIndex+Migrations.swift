import BlobCatalog
import BlobCore
import Foundation
import GRDB

/// The index in SQLite: its schema.
extension SQLiteBlobIndex {
    /// The schema, version by version. A database made before migrations were recorded has the
    /// tables of "1-tables" already, which that step then leaves as they are.
    // long-functions: flat table (one migration after another, as released), allowed over 60 lines.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("1-tables") { db in
            try db.execute(sql: """
                CREATE TABLE IF NOT EXISTS blobs (
                    key BLOB PRIMARY KEY,
                    version TEXT NOT NULL,
                    size INTEGER NOT NULL,
                    sha256 BLOB NOT NULL,
                    content_type TEXT NOT NULL,
                    modified INTEGER NOT NULL
                ) WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS uploads (
                    id TEXT PRIMARY KEY,
                    length INTEGER,
                    offset INTEGER NOT NULL,
                    hash_state BLOB NOT NULL,
                    metadata TEXT NOT NULL,
                    key BLOB,
                    content_type TEXT NOT NULL,
                    expires INTEGER NOT NULL,
                    completed_key BLOB
                ) WITHOUT ROWID;
                CREATE INDEX IF NOT EXISTS uploads_by_expiry ON uploads (expires);
                CREATE INDEX IF NOT EXISTS blobs_by_version ON blobs (version);
                CREATE TABLE IF NOT EXISTS garbage (version TEXT PRIMARY KEY) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("2-blob-headers") { db in
            try db.execute(sql: """
                ALTER TABLE blobs ADD COLUMN cache_control TEXT;
                ALTER TABLE blobs ADD COLUMN content_disposition TEXT;
                ALTER TABLE uploads ADD COLUMN cache_control TEXT;
                ALTER TABLE uploads ADD COLUMN content_disposition TEXT;
                """)
        }
        migrator.registerMigration("3-buckets") { db in
            try db.execute(sql: "CREATE TABLE buckets (name TEXT PRIMARY KEY, created INTEGER NOT NULL) WITHOUT ROWID")
        }
        migrator.registerMigration("4-more-attributes") { db in
            try db.execute(sql: """
                ALTER TABLE blobs ADD COLUMN content_encoding TEXT;
                ALTER TABLE blobs ADD COLUMN expires TEXT;
                ALTER TABLE blobs ADD COLUMN user_metadata TEXT;
                ALTER TABLE uploads ADD COLUMN content_encoding TEXT;
                ALTER TABLE uploads ADD COLUMN expires_header TEXT;
                ALTER TABLE uploads ADD COLUMN user_metadata TEXT;
                """)
        }
        migrator.registerMigration("5-md5") { db in
            try db.execute(sql: "ALTER TABLE blobs ADD COLUMN md5 BLOB")
        }
        migrator.registerMigration("6-multipart") { db in
            try db.execute(sql: """
                ALTER TABLE blobs ADD COLUMN parts INTEGER;
                CREATE TABLE multipart_uploads (
                    id TEXT PRIMARY KEY, key BLOB NOT NULL, content_type TEXT NOT NULL, cache_control TEXT,
                    content_disposition TEXT, content_encoding TEXT, expires_header TEXT, user_metadata TEXT,
                    created INTEGER NOT NULL, expires INTEGER NOT NULL, completed_etag TEXT
                ) WITHOUT ROWID;
                CREATE INDEX multipart_by_key ON multipart_uploads (key);
                CREATE TABLE multipart_parts (
                    upload TEXT NOT NULL, number INTEGER NOT NULL, size INTEGER NOT NULL, md5 BLOB NOT NULL,
                    modified INTEGER NOT NULL, PRIMARY KEY (upload, number)
                ) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("7-checksum") { db in
            try db.execute(sql: "ALTER TABLE blobs ADD COLUMN checksum TEXT")
        }
        migrator.registerMigration("8-part-sizes") { db in
            try db.execute(sql: "ALTER TABLE blobs ADD COLUMN part_sizes TEXT")
        }
        migrator.registerMigration("9-multipart-checksums") { db in
            try db.execute(sql: """
                ALTER TABLE multipart_uploads ADD COLUMN checksum TEXT;
                ALTER TABLE multipart_parts ADD COLUMN checksum TEXT;
                """)
        }
        migrator.registerMigration("10-s3-details") { db in
            try db.execute(sql: """
                ALTER TABLE blobs ADD COLUMN content_language TEXT;
                ALTER TABLE blobs ADD COLUMN part_checksums TEXT;
                ALTER TABLE multipart_uploads ADD COLUMN content_language TEXT;
                ALTER TABLE buckets ADD COLUMN region TEXT;
                """)
        }
        // Who started each upload (a credential or client address), for --max-open-uploads.
        migrator.registerMigration("11-upload-owners") { db in
            try db.execute(sql: """
                ALTER TABLE uploads ADD COLUMN owner TEXT;
                ALTER TABLE multipart_uploads ADD COLUMN owner TEXT;
                CREATE INDEX uploads_by_owner ON uploads (owner) WHERE owner IS NOT NULL;
                CREATE INDEX multipart_by_owner ON multipart_uploads (owner) WHERE owner IS NOT NULL;
                """)
        }
        // The Content-Language a tus upload gives its blob (Upload-Metadata `content-language`),
        // which was lost across a restart while uploads had no column for it.
        migrator.registerMigration("12-upload-content-language") { db in
            try db.execute(sql: "ALTER TABLE uploads ADD COLUMN content_language TEXT")
        }
        migrator.registerMigration("13-access") { db in try db.execute(sql: SQLiteAccessRow.schema) }
        // Canned ACLs and policies of buckets and objects (S3 access settings).
        migrator.registerMigration("14-bucket-access") { db in try db.execute(sql: bucketAccessSchema) }
        // The event outbox, written in the transaction of the change each event reports.
        migrator.registerMigration("15-events") { db in
            try db.execute(sql: """
                CREATE TABLE events (
                    id INTEGER PRIMARY KEY AUTOINCREMENT, target TEXT NOT NULL, bucket TEXT NOT NULL, key BLOB NOT NULL,
                    event TEXT NOT NULL, payload TEXT NOT NULL, created INTEGER NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
                    next_attempt INTEGER NOT NULL, claimed_by TEXT, lease_until INTEGER
                );
                CREATE INDEX events_by_target_key ON events (target, key, id);
                """)
        }
        // A blob's own deadline (?ttl=, tus ttl) and the one the expiry sweep finds it by (the
        // earlier of that and its bucket's lifecycle rules), indexed so that a sweep reads only
        // what is due.
        migrator.registerMigration("16-expiry") { db in
            try db.execute(sql: """
                ALTER TABLE blobs ADD COLUMN ttl_expires INTEGER;
                ALTER TABLE blobs ADD COLUMN expires_at INTEGER;
                CREATE INDEX blobs_by_expiry ON blobs (expires_at) WHERE expires_at IS NOT NULL;
                """)
        }
        // Versions (S3 versioning): every existing blob is its key's `null` version.
        migrator.registerMigration("17-versions") { db in try db.execute(sql: versionsSchema) }
        // Object Lock per version: a retention (mode, date) and a legal hold, current and noncurrent alike.
        migrator.registerMigration("18-object-lock") { db in
            for table in ["blobs", "blob_versions"] {
                try db.execute(sql: """
                    ALTER TABLE \(table) ADD COLUMN lock_mode TEXT;
                    ALTER TABLE \(table) ADD COLUMN lock_until INTEGER;
                    ALTER TABLE \(table) ADD COLUMN legal_hold INTEGER NOT NULL DEFAULT 0;
                    """)
            }
        }
        // The Object Lock a multipart upload asked for at its creation, which its Complete gives the version.
        migrator.registerMigration("19-multipart-lock") { db in
            try db.execute(sql: """
                ALTER TABLE multipart_uploads ADD COLUMN lock_mode TEXT;
                ALTER TABLE multipart_uploads ADD COLUMN lock_until INTEGER;
                ALTER TABLE multipart_uploads ADD COLUMN legal_hold INTEGER NOT NULL DEFAULT 0;
                """)
        }
        // When the lifecycle sweep looks at a noncurrent version or delete marker next
        // (NoncurrentVersionExpiration, ExpiredObjectDeleteMarker), indexed like blobs' deadline.
        migrator.registerMigration("20-version-sweep") { db in
            try db.execute(sql: """
                ALTER TABLE blob_versions ADD COLUMN sweep_at INTEGER;
                CREATE INDEX blob_versions_by_sweep ON blob_versions (sweep_at) WHERE sweep_at IS NOT NULL;
                """)
        }
        // The outbox in two tables (event_queue, event_retries), so that a commit appends one
        // row and updates no index; the events pending at the upgrade wait as retries, due as before.
        migrator.registerMigration("21-event-queue") { db in try db.execute(sql: eventQueueSchema) }
        return migrator
    }
}

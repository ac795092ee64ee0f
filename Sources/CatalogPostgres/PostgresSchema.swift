import BlobCatalog
import BlobCore
import Foundation
import PostgresClient

/// The PostgreSQL schema, version by version, applied at start under an advisory lock so that
/// nodes starting together do not race.
enum PostgresSchema {
    /// Advisory lock keys of blobd (arbitrary, fixed).
    static let migrationLock: Int64 = 0x626C_6F62_6400_0001
    static let reclaimLock: Int64 = 0x626C_6F62_6400_0002
    /// Held (per transaction) by the node running a batch of the expiry sweep.
    static let expiryLock: Int64 = 0x626C_6F62_6400_0E0F

    static let steps: [(name: String, sql: String)] = [
        ("1-tables", """
            CREATE TABLE blobs (
                key bytea PRIMARY KEY, version text NOT NULL, size bigint NOT NULL, sha256 bytea NOT NULL,
                content_type text NOT NULL, modified bigint NOT NULL, cache_control text, content_disposition text,
                content_encoding text, expires text, user_metadata text, md5 bytea, parts integer, checksum text
            );
            CREATE INDEX blobs_by_version ON blobs (version COLLATE "C");
            CREATE TABLE uploads (
                id text PRIMARY KEY, length bigint, "offset" bigint NOT NULL, hash_state bytea NOT NULL, metadata text NOT NULL,
                key bytea, content_type text NOT NULL, expires bigint NOT NULL, completed_key bytea, cache_control text,
                content_disposition text, content_encoding text, expires_header text, user_metadata text
            );
            CREATE TABLE claims (id text PRIMARY KEY, node text NOT NULL, until bigint NOT NULL);
            CREATE INDEX uploads_by_expiry ON uploads (expires);
            CREATE TABLE garbage (version text PRIMARY KEY, since bigint NOT NULL);
            CREATE INDEX garbage_by_age ON garbage (since);
            CREATE TABLE buckets (name text PRIMARY KEY, created bigint NOT NULL);
            CREATE TABLE multipart_uploads (
                id text PRIMARY KEY, key bytea NOT NULL, content_type text NOT NULL, cache_control text, content_disposition text,
                content_encoding text, expires_header text, user_metadata text, created bigint NOT NULL, expires bigint NOT NULL,
                completed_etag text
            );
            CREATE INDEX multipart_by_key ON multipart_uploads (key);
            CREATE TABLE multipart_parts (
                upload text NOT NULL, number integer NOT NULL, size bigint NOT NULL, md5 bytea NOT NULL, modified bigint NOT NULL,
                PRIMARY KEY (upload, number)
            );
            """),
        ("2-part-sizes", "ALTER TABLE blobs ADD COLUMN part_sizes text"),
        ("3-multipart-checksums", """
            ALTER TABLE multipart_uploads ADD COLUMN checksum text;
            ALTER TABLE multipart_parts ADD COLUMN checksum text;
            """),
        ("4-s3-details", """
            ALTER TABLE blobs ADD COLUMN content_language text;
            ALTER TABLE blobs ADD COLUMN part_checksums text;
            ALTER TABLE multipart_uploads ADD COLUMN content_language text;
            ALTER TABLE buckets ADD COLUMN region text;
            """),
        // Who started each upload (a credential or client address), for --max-open-uploads.
        ("5-upload-owners", """
            ALTER TABLE uploads ADD COLUMN owner text;
            ALTER TABLE multipart_uploads ADD COLUMN owner text;
            CREATE INDEX uploads_by_owner ON uploads (owner) WHERE owner IS NOT NULL;
            CREATE INDEX multipart_by_owner ON multipart_uploads (owner) WHERE owner IS NOT NULL;
            """),
        // The Content-Language a tus upload gives its blob (Upload-Metadata `content-language`),
        // which was lost across a restart while uploads had no column for it.
        ("6-upload-content-language", "ALTER TABLE uploads ADD COLUMN content_language text"),
        ("7-access", PostgresAccessRow.schema),
        // Canned ACLs and policies of buckets and objects (S3 access settings).
        ("8-bucket-access", PostgresBlobIndex.bucketAccessSchema),
        // The event outbox, written in the transaction of the change each event reports.
        ("9-events", PostgresBlobIndex.eventsSchema),
        // A blob's own deadline (?ttl=, tus ttl) and the one the expiry sweep finds it by (the
        // earlier of that and its bucket's lifecycle rules), indexed so that a sweep reads only
        // what is due.
        ("10-expiry", """
            ALTER TABLE blobs ADD COLUMN ttl_expires bigint;
            ALTER TABLE blobs ADD COLUMN expires_at bigint;
            CREATE INDEX blobs_by_expiry ON blobs (expires_at) WHERE expires_at IS NOT NULL;
            """),
        // Versions (S3 versioning): every existing blob is its key's `null` version.
        ("11-versions", PostgresBlobIndex.versionsSchema),
        // Object Lock per version: a retention (mode, date) and a legal hold, current and noncurrent alike.
        ("12-object-lock", """
            ALTER TABLE blobs ADD COLUMN lock_mode text;
            ALTER TABLE blobs ADD COLUMN lock_until bigint;
            ALTER TABLE blobs ADD COLUMN legal_hold boolean NOT NULL DEFAULT false;
            ALTER TABLE blob_versions ADD COLUMN lock_mode text;
            ALTER TABLE blob_versions ADD COLUMN lock_until bigint;
            ALTER TABLE blob_versions ADD COLUMN legal_hold boolean NOT NULL DEFAULT false;
            """),
        // The Object Lock a multipart upload asked for at its creation, which its Complete gives the version.
        ("13-multipart-lock", """
            ALTER TABLE multipart_uploads ADD COLUMN lock_mode text;
            ALTER TABLE multipart_uploads ADD COLUMN lock_until bigint;
            ALTER TABLE multipart_uploads ADD COLUMN legal_hold boolean NOT NULL DEFAULT false;
            """),
        // When the lifecycle sweep looks at a noncurrent version or delete marker next
        // (NoncurrentVersionExpiration, ExpiredObjectDeleteMarker), indexed like blobs' deadline.
        ("14-version-sweep", """
            ALTER TABLE blob_versions ADD COLUMN sweep_at bigint;
            CREATE INDEX blob_versions_by_sweep ON blob_versions (sweep_at) WHERE sweep_at IS NOT NULL;
            """),
        // The claim reads what is due by this index, so that a round finds nothing in a probe
        // when a dead webhook's events all wait for their retry, however many they are.
        ("15-events-due", "CREATE INDEX events_by_due ON events (next_attempt, id);"),
    ]

    static func migrate(_ pool: PostgresPool) throws(PostgresError) {
        try pool.transaction { connection throws(PostgresError) in
            try connection.simple("SELECT pg_advisory_xact_lock(\(migrationLock))")
            try connection.simple("CREATE TABLE IF NOT EXISTS blobd_migrations (name text PRIMARY KEY, applied bigint NOT NULL)")
            let applied = Set(try connection.execute("SELECT name FROM blobd_migrations").rows.compactMap { $0.text("name") })
            for step in steps where !applied.contains(step.name) {
                try connection.simple(step.sql)
                try connection.execute("INSERT INTO blobd_migrations (name, applied) VALUES ($1, $2)",
                                       [.text(step.name), .int(Int64(time(nil)))])
            }
        }
    }
}

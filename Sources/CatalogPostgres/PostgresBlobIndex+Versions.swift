import BlobCatalog
import BlobCore
import Foundation
import PostgresClient

/// The index in PostgreSQL: noncurrent versions and delete markers (`blob_versions`) beside
/// the current records (`blobs`), for versioned buckets (see `VersionIndex`, written once over
/// `PostgresCatalogTransaction` in BlobCatalog).
extension PostgresBlobIndex: VersionIndex {
    static let versionsSchema = """
        ALTER TABLE blobs ADD COLUMN versioned boolean NOT NULL DEFAULT false;
        CREATE TABLE blob_versions (
            seq bigserial PRIMARY KEY,
            key bytea NOT NULL, version text NOT NULL, size bigint NOT NULL, sha256 bytea NOT NULL, content_type text NOT NULL,
            modified bigint NOT NULL, cache_control text, content_disposition text, content_encoding text, expires text,
            user_metadata text, md5 bytea, parts integer, checksum text, part_sizes text, content_language text, part_checksums text,
            ttl_expires bigint, expires_at bigint,
            versioned boolean NOT NULL DEFAULT false, delete_marker boolean NOT NULL DEFAULT false
        );
        CREATE INDEX blob_versions_by_key ON blob_versions (key, seq);
        CREATE INDEX blob_versions_by_version ON blob_versions (version COLLATE "C");
        """

    // MARK: Rows

    /// A noncurrent version's row (not latest; the caller decides).
    static func version(from row: PostgresRow) -> BlobVersion? {
        guard let record = PostgresBlobRow.record(from: row) else { return nil }
        return BlobVersion(record: record, deleteMarker: row.bool("delete_marker") ?? false, latest: false)
    }
}

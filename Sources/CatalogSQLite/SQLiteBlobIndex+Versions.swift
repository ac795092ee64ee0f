import BlobCatalog
import BlobCore
import Foundation
import GRDB

/// The index in SQLite: noncurrent versions and delete markers (`blob_versions`) beside the
/// current records (`blobs`), for versioned buckets (see `VersionIndex`, written once over
/// `SQLiteCatalogTransaction` in BlobCatalog).
extension SQLiteBlobIndex: VersionIndex {
    static let versionsSchema = """
        ALTER TABLE blobs ADD COLUMN versioned INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE blob_versions (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            key BLOB NOT NULL, version TEXT NOT NULL, size INTEGER NOT NULL, sha256 BLOB NOT NULL, content_type TEXT NOT NULL,
            modified INTEGER NOT NULL, cache_control TEXT, content_disposition TEXT, content_encoding TEXT, expires TEXT,
            user_metadata TEXT, md5 BLOB, parts INTEGER, checksum TEXT, part_sizes TEXT, content_language TEXT, part_checksums TEXT,
            ttl_expires INTEGER, expires_at INTEGER,
            versioned INTEGER NOT NULL DEFAULT 0, delete_marker INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX blob_versions_by_key ON blob_versions (key, seq);
        CREATE INDEX blob_versions_by_version ON blob_versions (version);
        """

    // MARK: Export (migrate-index)

    /// Up to `limit` rows of noncurrent versions and delete markers after row `seq`, oldest
    /// first (so each key's versions keep their order wherever they are inserted in turn), and
    /// the last row's seq (nil when there are no more rows; a row whose key fails validation
    /// is skipped but still counts).
    public func exportVersions(after seq: Int64, limit: Int) throws(StoreError) -> (versions: [BlobVersion], last: Int64?) {
        try run {
            try pool.read { db in
                let rows = try Row.fetchAll(db, sql: "SELECT * FROM blob_versions WHERE seq > ? ORDER BY seq LIMIT ?",
                                            arguments: [seq, limit])
                return (rows.compactMap(Self.version(from:)), rows.last.map { $0["seq"] })
            }
        }
    }

    // MARK: Rows

    /// A noncurrent version's row (not latest; the caller decides).
    static func version(from row: Row) -> BlobVersion? {
        guard var record = SQLiteBlobRow.record(from: row) else { return nil }
        record.versioned = (row["versioned"] as Int64? ?? 0) != 0
        return BlobVersion(record: record, deleteMarker: (row["delete_marker"] as Int64? ?? 0) != 0, latest: false)
    }
}

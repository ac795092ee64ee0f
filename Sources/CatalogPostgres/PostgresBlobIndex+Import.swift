import BlobCatalog
import BlobCore
import Foundation
import PostgresClient

/// The index in PostgreSQL: importing a single-node index (`blobd migrate-index`).
extension PostgresBlobIndex {
    // MARK: Import (migrate-index)

    /// Adds what a single-node index holds, in one transaction, keeping whatever the database
    /// has already (a migration run again after an interruption, or after the cluster wrote):
    /// every insert is `ON CONFLICT DO NOTHING`. Returns how many blob records were new.
    public func importBatch(records: [BlobRecord], uploads: [UploadRecord] = [], multipart: [(MultipartUpload, [UploadedPart])] = [])
        throws(StoreError) -> Int {
        try run { () throws(PostgresError) in
            try pool.transaction { connection throws(PostgresError) in
                var added = 0
                for record in records {
                    added += try connection.execute(PostgresBlobRow.insert, PostgresBlobRow.values(record)).affected
                }
                for upload in uploads {
                    try connection.execute("""
                        INSERT INTO uploads (id, length, "offset", hash_state, metadata, key, content_type, expires, completed_key,
                                             cache_control, content_disposition, content_encoding, expires_header, user_metadata)
                        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) ON CONFLICT (id) DO NOTHING
                        """, Self.values(upload))
                }
                for (upload, parts) in multipart {
                    try connection.execute("""
                        INSERT INTO multipart_uploads (id, key, content_type, cache_control, content_disposition, content_encoding,
                            expires_header, user_metadata, created, expires, completed_etag, checksum, content_language)
                        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT (id) DO NOTHING
                        """, Self.values(upload))
                    for part in parts {
                        try connection.execute("""
                            INSERT INTO multipart_parts (upload, number, size, md5, modified, checksum) VALUES ($1, $2, $3, $4, $5, $6)
                            ON CONFLICT (upload, number) DO NOTHING
                            """, Self.values(part, of: upload.id))
                    }
                }
                return added
            }
        }
    }
}

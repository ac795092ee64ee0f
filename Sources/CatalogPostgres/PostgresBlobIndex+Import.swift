import BlobCatalog
import BlobCore
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
}

import BlobCatalog
import BlobCore
import Foundation
import GRDB

/// The index in SQLite: resumable (tus) uploads.
extension SQLiteBlobIndex {
    // MARK: Resumable uploads

    public func insert(_ upload: UploadRecord, owner: String?, limit: Int) throws(StoreError) {
        try insertCounting(owner: owner, limit: limit) { db in
            try db.execute(sql: """
                INSERT INTO uploads (id, length, offset, hash_state, metadata, key, content_type, expires, completed_key,
                                     cache_control, content_disposition, content_encoding, expires_header, user_metadata, owner)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: Self.arguments(upload) + [owner])
        }
    }

    public func upload(_ id: String) throws(StoreError) -> UploadRecord? {
        try run {
            try pool.read { db in
                try Row.fetchOne(db, sql: "SELECT * FROM uploads WHERE id = ?", arguments: [id]).flatMap { Self.upload(from: $0, reportingTo: invalidKeys) }
            }
        }
    }

    public func save(_ upload: UploadRecord) throws(StoreError) {
        try write { db in
            try db.execute(sql: """
                UPDATE uploads SET length = ?2, offset = ?3, hash_state = ?4, metadata = ?5, key = ?6,
                    content_type = ?7, expires = ?8, completed_key = ?9, cache_control = ?10,
                    content_disposition = ?11, content_encoding = ?12, expires_header = ?13, user_metadata = ?14 WHERE id = ?1
                """, arguments: Self.arguments(upload))
        }
    }

    public func removeUpload(_ id: String) throws(StoreError) {
        try write { db in try db.execute(sql: "DELETE FROM uploads WHERE id = ?", arguments: [id]) }
    }

    public func expiredUploads(now: Int64) throws(StoreError) -> [String] {
        try run { try pool.read { db in try String.fetchAll(db, sql: "SELECT id FROM uploads WHERE expires <= ?", arguments: [now]) } }
    }

    static func arguments(_ upload: UploadRecord) -> StatementArguments {
        [upload.id, upload.length.map { Int64($0) }, Int64(upload.offset), Data(upload.hashState), upload.metadata,
         upload.key.map { Data($0.bytes) }, upload.attributes.contentType, upload.expires, upload.completedKey.map { Data($0.bytes) },
         upload.attributes.cacheControl, upload.attributes.contentDisposition, upload.attributes.contentEncoding,
         upload.attributes.expires, upload.attributes.userMetadataText]
    }

    /// The upload of an `uploads` row; a key or completed key that fails validation is nil, and
    /// reported to `invalid`.
    static func upload(from row: Row, reportingTo invalid: InvalidKeyRows?) -> UploadRecord? {
        let length: Int64? = row["length"]
        let offset: Int64 = row["offset"]
        let hashState: Data = row["hash_state"]
        let key: Data? = row["key"]
        let completed: Data? = row["completed_key"]
        return UploadRecord(
            id: row["id"], length: length.map { UInt64(max(0, $0)) }, offset: UInt64(max(0, offset)),
            hashState: Array(hashState), metadata: row["metadata"], key: key.flatMap { InvalidKeyRows.key($0, in: "uploads", reportingTo: invalid) },
            attributes: BlobAttributes(contentType: row["content_type"], cacheControl: row["cache_control"],
                                       contentDisposition: row["content_disposition"], contentEncoding: row["content_encoding"],
                                       expires: row["expires_header"],
                                       userMetadata: BlobAttributes.userMetadata(fromText: row["user_metadata"])),
            expires: row["expires"],
            completedKey: completed.flatMap { InvalidKeyRows.key($0, in: "uploads", reportingTo: invalid) })
    }
}

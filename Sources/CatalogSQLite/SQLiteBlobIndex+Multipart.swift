import BlobCatalog
import BlobCore
import Foundation
import GRDB

/// The index in SQLite: S3 multipart uploads and their parts.
extension SQLiteBlobIndex {
    // MARK: Multipart uploads (S3)

    public func insertMultipart(_ upload: MultipartUpload, owner: String?, limit: Int) throws(StoreError) {
        try insertCounting(owner: owner, limit: limit) { db in
            try db.execute(sql: """
                INSERT INTO multipart_uploads (id, key, content_type, cache_control, content_disposition, content_encoding,
                    expires_header, user_metadata, created, expires, completed_etag, checksum, content_language, owner)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [upload.id, Data(upload.key.bytes), upload.attributes.contentType, upload.attributes.cacheControl,
                                  upload.attributes.contentDisposition, upload.attributes.contentEncoding, upload.attributes.expires,
                                  upload.attributes.userMetadataText, upload.created, upload.expires, upload.completedETag,
                                  upload.checksum, upload.attributes.contentLanguage, owner])
        }
    }

    /// Runs `insert` in a transaction that first counts `owner`'s unfinished uploads (see
    /// `MultipartIndex.insertMultipart`); SQLite's one writer makes the count exact.
    func insertCounting(owner: String?, limit: Int, _ insert: @escaping (Database) throws -> Void) throws(StoreError) {
        let refused: Bool = try write { db in
            if let owner, limit > 0, let open = try Int.fetchOne(db, sql: """
                SELECT (SELECT COUNT(*) FROM uploads WHERE owner = ?1 AND completed_key IS NULL AND expires > ?2)
                     + (SELECT COUNT(*) FROM multipart_uploads WHERE owner = ?1 AND completed_etag IS NULL AND expires > ?2)
                """, arguments: [owner, Int64(time(nil))]), open >= limit {
                return true
            }
            try insert(db)
            return false
        }
        if refused { throw .tooManyUploads(limit: limit) }
    }

    public func multipart(_ id: String) throws(StoreError) -> MultipartUpload? {
        try run {
            try pool.read { db in
                try Row.fetchOne(db, sql: "SELECT * FROM multipart_uploads WHERE id = ?", arguments: [id])
                    .flatMap { Self.multipart(from: $0, reportingTo: invalidKeys) }
            }
        }
    }

    public func multipartUploads(prefix: [UInt8]) throws(StoreError) -> [MultipartUpload] {
        let upper = prefixUpperBound(of: prefix) ?? [0xFF]
        return try run {
            try pool.read { db in
                try Row.fetchAll(db, sql: """
                    SELECT * FROM multipart_uploads WHERE key >= ? AND key < ? AND completed_etag IS NULL ORDER BY key, created
                    """, arguments: [Data(prefix), Data(upper)]).compactMap { Self.multipart(from: $0, reportingTo: invalidKeys) }
            }
        }
    }

    public func savePart(_ part: UploadedPart, of id: String) throws(StoreError) -> UploadedPart? {
        let result: Result<UploadedPart?, StoreError> = try write { db in
            guard try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM multipart_uploads WHERE id = ? AND completed_etag IS NULL)",
                                    arguments: [id]) == true else { return .failure(.uploadNotFound) }
            let previous = try Row.fetchOne(db, sql: "SELECT * FROM multipart_parts WHERE upload = ? AND number = ?",
                                            arguments: [id, part.number]).map(Self.part(from:))
            try db.execute(sql: """
                INSERT OR REPLACE INTO multipart_parts (upload, number, size, md5, modified, checksum) VALUES (?, ?, ?, ?, ?, ?)
                """, arguments: [id, part.number, Int64(part.size), Data(part.md5), part.modified, part.checksum])
            return .success(previous)
        }
        return try result.get()
    }

    static func part(from row: Row) -> UploadedPart {
        UploadedPart(number: row["number"], size: UInt64(max(0, row["size"] as Int64)), md5: Array(row["md5"] as Data),
                     modified: row["modified"], checksum: row["checksum"])
    }

    public func parts(of id: String) throws(StoreError) -> [UploadedPart] {
        try run {
            try pool.read { db in
                try Row.fetchAll(db, sql: "SELECT * FROM multipart_parts WHERE upload = ? ORDER BY number", arguments: [id]).map(Self.part(from:))
            }
        }
    }

    public func markCompleted(_ id: String, etag: String, checksum: String?) throws(StoreError) {
        try write { db in
            try db.execute(sql: "UPDATE multipart_uploads SET completed_etag = ?, checksum = ? WHERE id = ?", arguments: [etag, checksum, id])
            try db.execute(sql: "DELETE FROM multipart_parts WHERE upload = ?", arguments: [id])
        }
    }

    public func removeMultipart(_ id: String) throws(StoreError) {
        try write { db in
            try db.execute(sql: "DELETE FROM multipart_parts WHERE upload = ?", arguments: [id])
            try db.execute(sql: "DELETE FROM multipart_uploads WHERE id = ?", arguments: [id])
        }
    }

    public func expiredMultipartUploads(now: Int64) throws(StoreError) -> [String] {
        try run { try pool.read { db in try String.fetchAll(db, sql: "SELECT id FROM multipart_uploads WHERE expires <= ?", arguments: [now]) } }
    }

    /// The upload of a `multipart_uploads` row; nil, reported to `invalid`, if its key fails validation.
    static func multipart(from row: Row, reportingTo invalid: InvalidKeyRows?) -> MultipartUpload? {
        guard let key = InvalidKeyRows.key(row["key"] as Data, in: "multipart_uploads", reportingTo: invalid) else { return nil }
        return MultipartUpload(
            id: row["id"], key: key,
            attributes: BlobAttributes(contentType: row["content_type"], cacheControl: row["cache_control"],
                                       contentDisposition: row["content_disposition"], contentEncoding: row["content_encoding"],
                                       contentLanguage: row["content_language"], expires: row["expires_header"],
                                       userMetadata: BlobAttributes.userMetadata(fromText: row["user_metadata"])),
            created: row["created"], expires: row["expires"], completedETag: row["completed_etag"], checksum: row["checksum"])
    }
}

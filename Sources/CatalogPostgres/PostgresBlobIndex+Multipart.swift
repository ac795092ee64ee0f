import BlobCatalog
import BlobCore
import Foundation
import PostgresClient

/// The index in PostgreSQL: S3 multipart uploads and their parts.
extension PostgresBlobIndex {
    // MARK: Multipart uploads (S3)

    public func insertMultipart(_ upload: MultipartUpload, owner: String?, limit: Int) throws(StoreError) {
        try insertCounting(owner: owner, limit: limit) { connection throws(PostgresError) in
            try connection.execute("""
                INSERT INTO multipart_uploads (id, key, content_type, cache_control, content_disposition, content_encoding,
                    expires_header, user_metadata, created, expires, completed_etag, checksum, content_language, owner)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
                """, Self.values(upload) + [Self.optional(owner)])
        }
    }

    /// Runs `insert` in a transaction that first counts `owner`'s unfinished uploads (see
    /// `MultipartIndex.insertMultipart`), under an advisory lock on the owner so that concurrent
    /// creations on several nodes count one another.
    func insertCounting(owner: String?, limit: Int,
                                _ insert: (PostgresConnection) throws(PostgresError) -> Void) throws(StoreError) {
        let refused: Bool = try run { () throws(PostgresError) in
            try pool.transaction { connection throws(PostgresError) in
                if let owner, limit > 0 {
                    try connection.execute("SELECT pg_advisory_xact_lock(hashtext($1))", [.text(owner)])
                    let open = try connection.execute("""
                        SELECT (SELECT COUNT(*) FROM uploads WHERE owner = $1 AND completed_key IS NULL AND expires > $2)
                             + (SELECT COUNT(*) FROM multipart_uploads WHERE owner = $1 AND completed_etag IS NULL AND expires > $2) AS n
                        """, [.text(owner), .int(Int64(time(nil)))]).rows.first?.int("n") ?? 0
                    if open >= Int64(limit) { return true }
                }
                try insert(connection)
                return false
            }
        }
        if refused { throw .tooManyUploads(limit: limit) }
    }

    public func multipart(_ id: String) throws(StoreError) -> MultipartUpload? {
        try rows("SELECT * FROM multipart_uploads WHERE id = $1", [.text(id)]).first.flatMap { Self.multipart(from: $0, reportingTo: invalidKeys) }
    }

    public func multipartUploads(prefix: [UInt8]) throws(StoreError) -> [MultipartUpload] {
        let upper = prefixUpperBound(of: prefix) ?? [0xFF]
        return try rows("""
            SELECT * FROM multipart_uploads WHERE key >= $1 AND key < $2 AND completed_etag IS NULL ORDER BY key, created
            """, [.bytes(prefix), .bytes(upper)]).compactMap { Self.multipart(from: $0, reportingTo: invalidKeys) }
    }

    public func savePart(_ part: UploadedPart, of id: String) throws(StoreError) -> UploadedPart? {
        let result: Result<UploadedPart?, StoreError> = try run { () throws(PostgresError) in
            try pool.transaction { connection throws(PostgresError) in
                guard try connection.execute("SELECT id FROM multipart_uploads WHERE id = $1 AND completed_etag IS NULL FOR UPDATE",
                                             [.text(id)]).count > 0 else { return .failure(.uploadNotFound) }
                let previous = try connection.execute("SELECT * FROM multipart_parts WHERE upload = $1 AND number = $2",
                                                      [.text(id), .int(Int64(part.number))]).rows.first.map(Self.part(from:))
                try connection.execute("""
                    INSERT INTO multipart_parts (upload, number, size, md5, modified, checksum) VALUES ($1, $2, $3, $4, $5, $6)
                    ON CONFLICT (upload, number) DO UPDATE SET size = excluded.size, md5 = excluded.md5, modified = excluded.modified,
                        checksum = excluded.checksum
                    """, Self.values(part, of: id))
                return .success(previous)
            }
        }
        return try result.get()
    }

    public func parts(of id: String) throws(StoreError) -> [UploadedPart] {
        try rows("SELECT * FROM multipart_parts WHERE upload = $1 ORDER BY number", [.text(id)]).map(Self.part(from:))
    }

    public func markCompleted(_ id: String, etag: String, checksum: String?) throws(StoreError) {
        try transaction { connection throws(PostgresError) in
            try connection.execute("UPDATE multipart_uploads SET completed_etag = $1, checksum = $2 WHERE id = $3",
                                   [.text(etag), Self.optional(checksum), .text(id)])
            try connection.execute("DELETE FROM multipart_parts WHERE upload = $1", [.text(id)])
        }
    }

    public func removeMultipart(_ id: String) throws(StoreError) {
        try transaction { connection throws(PostgresError) in
            try connection.execute("DELETE FROM multipart_parts WHERE upload = $1", [.text(id)])
            try connection.execute("DELETE FROM multipart_uploads WHERE id = $1", [.text(id)])
        }
    }

    public func expiredMultipartUploads(now: Int64) throws(StoreError) -> [String] {
        try texts("SELECT id FROM multipart_uploads WHERE expires <= $1", [.int(now)], column: "id")
    }

    static func part(from row: PostgresRow) -> UploadedPart {
        UploadedPart(number: Int(row.int("number") ?? 0), size: UInt64(max(0, row.int("size") ?? 0)), md5: row.bytes("md5") ?? [],
                     modified: row.int("modified") ?? 0, checksum: row.text("checksum"))
    }

    static func values(_ part: UploadedPart, of id: String) -> [PostgresValue] {
        [.text(id), .int(Int64(part.number)), .int(Int64(part.size)), .bytes(part.md5), .int(part.modified), optional(part.checksum)]
    }

    static func values(_ upload: MultipartUpload) -> [PostgresValue] {
        let attributes = upload.attributes
        return [.text(upload.id), .bytes(upload.key.bytes), .text(attributes.contentType), optional(attributes.cacheControl),
                optional(attributes.contentDisposition), optional(attributes.contentEncoding), optional(attributes.expires),
                optional(attributes.userMetadataText), .int(upload.created), .int(upload.expires), optional(upload.completedETag),
                optional(upload.checksum), optional(attributes.contentLanguage)]
    }

    /// The upload of a `multipart_uploads` row; nil, reported to `invalid`, if its key fails validation.
    static func multipart(from row: PostgresRow, reportingTo invalid: InvalidKeyRows?) -> MultipartUpload? {
        guard let id = row.text("id"), let bytes = row.bytes("key"),
              let key = InvalidKeyRows.key(bytes, in: "multipart_uploads", reportingTo: invalid) else { return nil }
        return MultipartUpload(id: id, key: key, attributes: attributes(row, expiresColumn: "expires_header"),
                               created: row.int("created") ?? 0, expires: row.int("expires") ?? 0, completedETag: row.text("completed_etag"),
                               checksum: row.text("checksum"))
    }
}

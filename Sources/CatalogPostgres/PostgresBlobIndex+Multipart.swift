import BlobCatalog
import BlobCore
import Foundation
import PostgresClient

/// The index in PostgreSQL: S3 multipart uploads and their parts.
extension PostgresBlobIndex {
    // MARK: Multipart uploads (S3)

    public func insertMultipart(_ upload: MultipartUpload, owner: String?, limit: Int) throws(StoreError) {
        try insertCounting(owner: owner, limit: limit) { connection throws(PostgresError) in
            try connection.execute(PostgresMultipartRow.insert, PostgresMultipartRow.values(upload) + [Self.optional(owner)])
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
                        """, [.text(owner), .int(clock.seconds)]).rows.first?.int("n") ?? 0
                    if open >= Int64(limit) { return true }
                }
                try insert(connection)
                return false
            }
        }
        if refused { throw .tooManyUploads(limit: limit) }
    }

    public func multipart(_ id: String) throws(StoreError) -> MultipartUpload? {
        try rows("SELECT * FROM multipart_uploads WHERE id = $1", [.text(id)]).first
            .flatMap { PostgresMultipartRow.upload(from: $0, reportingTo: invalidKeys) }
    }

    public func multipartUploads(prefix: [UInt8]) throws(StoreError) -> [MultipartUpload] {
        let upper = prefixUpperBound(of: prefix) ?? [0xFF]
        return try rows("""
            SELECT * FROM multipart_uploads WHERE key >= $1 AND key < $2 AND completed_etag IS NULL ORDER BY key, created
            """, [.bytes(prefix), .bytes(upper)]).compactMap { PostgresMultipartRow.upload(from: $0, reportingTo: invalidKeys) }
    }

    public func savePart(_ part: UploadedPart, of id: String) throws(StoreError) -> UploadedPart? {
        let result: Result<UploadedPart?, StoreError> = try run { () throws(PostgresError) in
            try pool.transaction { connection throws(PostgresError) in
                guard try connection.execute("SELECT id FROM multipart_uploads WHERE id = $1 AND completed_etag IS NULL FOR UPDATE",
                                             [.text(id)]).count > 0 else { return .failure(.uploadNotFound) }
                let previous = try connection.execute("SELECT * FROM multipart_parts WHERE upload = $1 AND number = $2",
                                                      [.text(id), .int(Int64(part.number))]).rows.first.map(PostgresMultipartRow.part(from:))
                try connection.execute(PostgresMultipartRow.upsertPart, PostgresMultipartRow.values(part, of: id))
                return .success(previous)
            }
        }
        return try result.get()
    }

    public func parts(of id: String) throws(StoreError) -> [UploadedPart] {
        try rows("SELECT * FROM multipart_parts WHERE upload = $1 ORDER BY number", [.text(id)]).map(PostgresMultipartRow.part(from:))
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

    public func extendMultipart(_ id: String, until expires: Int64) throws(StoreError) {
        try execute("UPDATE multipart_uploads SET expires = $1 WHERE id = $2 AND completed_etag IS NULL", [.int(expires), .text(id)])
    }
}

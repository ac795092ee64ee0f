import BlobCatalog
import BlobCore
import Foundation
import GRDB

/// The index in SQLite: S3 multipart uploads and their parts.
extension SQLiteBlobIndex {
    // MARK: Multipart uploads (S3)

    public func insertMultipart(_ upload: MultipartUpload, owner: String?, limit: Int) throws(StoreError) {
        try insertCounting(owner: owner, limit: limit) { db in
            try db.execute(sql: SQLiteMultipartRow.insert, arguments: SQLiteMultipartRow.arguments(upload) + [owner])
        }
    }

    /// Runs `insert` in a transaction that first counts `owner`'s unfinished uploads (see
    /// `MultipartIndex.insertMultipart`); SQLite's one writer makes the count exact.
    func insertCounting(owner: String?, limit: Int, _ insert: @escaping (Database) throws -> Void) throws(StoreError) {
        let refused: Bool = try write { db in
            if let owner, limit > 0, let open = try Int.fetchOne(db, sql: """
                SELECT (SELECT COUNT(*) FROM uploads WHERE owner = ?1 AND completed_key IS NULL AND expires > ?2)
                     + (SELECT COUNT(*) FROM multipart_uploads WHERE owner = ?1 AND completed_etag IS NULL AND expires > ?2)
                """, arguments: [owner, clock.seconds]), open >= limit {
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
                    .flatMap { SQLiteMultipartRow.upload(from: $0, reportingTo: invalidKeys) }
            }
        }
    }

    public func multipartUploads(prefix: [UInt8]) throws(StoreError) -> [MultipartUpload] {
        let upper = prefixUpperBound(of: prefix) ?? [0xFF]
        return try run {
            try pool.read { db in
                try Row.fetchAll(db, sql: """
                    SELECT * FROM multipart_uploads WHERE key >= ? AND key < ? AND completed_etag IS NULL ORDER BY key, created
                    """, arguments: [Data(prefix), Data(upper)]).compactMap { SQLiteMultipartRow.upload(from: $0, reportingTo: invalidKeys) }
            }
        }
    }

    public func savePart(_ part: UploadedPart, of id: String) throws(StoreError) -> UploadedPart? {
        let result: Result<UploadedPart?, StoreError> = try write { db in
            guard try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM multipart_uploads WHERE id = ? AND completed_etag IS NULL)",
                                    arguments: [id]) == true else { return .failure(.uploadNotFound) }
            let previous = try Row.fetchOne(db, sql: "SELECT * FROM multipart_parts WHERE upload = ? AND number = ?",
                                            arguments: [id, part.number]).map(SQLiteMultipartRow.part(from:))
            try db.execute(sql: SQLiteMultipartRow.upsertPart, arguments: SQLiteMultipartRow.arguments(part, of: id))
            return .success(previous)
        }
        return try result.get()
    }

    public func parts(of id: String) throws(StoreError) -> [UploadedPart] {
        try run {
            try pool.read { db in
                try Row.fetchAll(db, sql: "SELECT * FROM multipart_parts WHERE upload = ? ORDER BY number", arguments: [id])
                    .map(SQLiteMultipartRow.part(from:))
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

    public func extendMultipart(_ id: String, until expires: Int64) throws(StoreError) {
        try write { db in
            try db.execute(sql: "UPDATE multipart_uploads SET expires = ? WHERE id = ? AND completed_etag IS NULL", arguments: [expires, id])
        }
    }

    /// Every unfinished upload with its owner and parts (`migrate-index`).
    public func exportMultipart() throws(StoreError) -> [(upload: MultipartUpload, owner: String?, parts: [UploadedPart])] {
        try run {
            try pool.read { db in
                try Row.fetchAll(db, sql: "SELECT * FROM multipart_uploads WHERE completed_etag IS NULL ORDER BY key, created")
                    .compactMap { row in
                        guard let upload = SQLiteMultipartRow.upload(from: row, reportingTo: invalidKeys) else { return nil }
                        let parts = try Row.fetchAll(db, sql: "SELECT * FROM multipart_parts WHERE upload = ? ORDER BY number",
                                                     arguments: [upload.id]).map(SQLiteMultipartRow.part(from:))
                        return (upload, row["owner"] as String?, parts)
                    }
            }
        }
    }
}

import BlobCatalog
import BlobCore
import Foundation
import GRDB

/// The index in SQLite: resumable (tus) uploads.
extension SQLiteBlobIndex {
    // MARK: Resumable uploads

    public func insert(_ upload: UploadRecord, owner: String?, limit: Int) throws(StoreError) {
        try insertCounting(owner: owner, limit: limit) { db in
            try db.execute(sql: SQLiteUploadRow.insert, arguments: SQLiteUploadRow.arguments(upload) + [owner])
        }
    }

    public func upload(_ id: String) throws(StoreError) -> UploadRecord? {
        try run {
            try pool.read { db in
                try Row.fetchOne(db, sql: "SELECT * FROM uploads WHERE id = ?", arguments: [id])
                    .map { SQLiteUploadRow.upload(from: $0, reportingTo: invalidKeys) }
            }
        }
    }

    public func owner(ofUpload id: String) throws(StoreError) -> String? {
        try run { try pool.read { db in try String.fetchOne(db, sql: "SELECT owner FROM uploads WHERE id = ?", arguments: [id]) } }
    }

    public func save(_ upload: UploadRecord) throws(StoreError) {
        try write { db in try db.execute(sql: SQLiteUploadRow.update, arguments: SQLiteUploadRow.arguments(upload)) }
    }

    public func removeUpload(_ id: String) throws(StoreError) {
        try write { db in try db.execute(sql: "DELETE FROM uploads WHERE id = ?", arguments: [id]) }
    }

    public func expiredUploads(now: Int64) throws(StoreError) -> [String] {
        try run { try pool.read { db in try String.fetchAll(db, sql: "SELECT id FROM uploads WHERE expires <= ?", arguments: [now]) } }
    }

    /// Every upload, finished or not, with its owner (`migrate-index`).
    public func exportUploads() throws(StoreError) -> [(upload: UploadRecord, owner: String?)] {
        try run {
            try pool.read { db in
                try Row.fetchAll(db, sql: "SELECT * FROM uploads ORDER BY id").map { row in
                    (SQLiteUploadRow.upload(from: row, reportingTo: invalidKeys), row["owner"] as String?)
                }
            }
        }
    }
}

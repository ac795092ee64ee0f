import BlobCatalog
import BlobCore
import Foundation
import GRDB

/// A tus upload as a row of SQLite's `uploads` table: the one place that lists the columns and
/// maps a row to an `UploadRecord` and back, so that a new column touches this codec and one
/// migration (`SQLiteBlobIndex.migrator`). `owner` is written once, at insert, and read only
/// by `migrate-index` (`SQLiteBlobIndex.exportUploads`); the commit that completes an upload
/// sets `completed_key` and `offset` itself.
enum SQLiteUploadRow {
    /// The columns, `id` first, in the order of `arguments(_:)`.
    static let columns = [
        "id", "length", "offset", "hash_state", "metadata", "key", "content_type", "expires", "completed_key", "cache_control",
        "content_disposition", "content_encoding", "expires_header", "user_metadata", "content_language",
    ]

    /// Inserts `arguments(_:)` followed by the owner.
    static let insert = "INSERT INTO uploads (\((columns + ["owner"]).joined(separator: ", "))) VALUES ("
        + Array(repeating: "?", count: columns.count + 1).joined(separator: ", ") + ")"

    /// Overwrites the id's row (but its owner) with `arguments(_:)`.
    static let update = "UPDATE uploads SET "
        + columns.indices.dropFirst().map { "\(columns[$0]) = ?\($0 + 1)" }.joined(separator: ", ") + " WHERE id = ?1"

    /// The arguments of `update`, and of `insert` with the owner after them.
    static func arguments(_ upload: UploadRecord) -> StatementArguments {
        let attributes = upload.attributes
        return [upload.id, upload.length.map { Int64($0) }, Int64(upload.offset), Data(upload.hashState), upload.metadata,
                upload.key.map { Data($0.bytes) }, attributes.contentType, upload.expires, upload.completedKey.map { Data($0.bytes) },
                attributes.cacheControl, attributes.contentDisposition, attributes.contentEncoding, attributes.expires,
                attributes.userMetadataText, attributes.contentLanguage]
    }

    /// The upload of an `uploads` row; a key or completed key that fails validation is nil, and
    /// reported to `invalid`.
    static func upload(from row: Row, reportingTo invalid: InvalidKeyRows?) -> UploadRecord {
        let length: Int64? = row["length"]
        let offset: Int64 = row["offset"]
        let hashState: Data = row["hash_state"]
        let key: Data? = row["key"]
        let completed: Data? = row["completed_key"]
        return UploadRecord(
            id: row["id"], length: length.map { UInt64(max(0, $0)) }, offset: UInt64(max(0, offset)), hashState: Array(hashState),
            metadata: row["metadata"], key: key.flatMap { InvalidKeyRows.key($0, in: "uploads", reportingTo: invalid) },
            attributes: attributes(row, expiresColumn: "expires_header"), expires: row["expires"],
            completedKey: completed.flatMap { InvalidKeyRows.key($0, in: "uploads", reportingTo: invalid) })
    }

    /// The attribute columns that uploads and multipart uploads share (the Expires header is in
    /// `expiresColumn`).
    static func attributes(_ row: Row, expiresColumn: String) -> BlobAttributes {
        BlobAttributes(contentType: row["content_type"], cacheControl: row["cache_control"], contentDisposition: row["content_disposition"],
                       contentEncoding: row["content_encoding"], contentLanguage: row["content_language"], expires: row[expiresColumn],
                       userMetadata: BlobAttributes.userMetadata(fromText: row["user_metadata"]))
    }
}

import BlobCatalog
import BlobCore
import Foundation
import GRDB

/// An S3 multipart upload as a row of SQLite's `multipart_uploads` table, and a part as a row of
/// `multipart_parts`: the one place that lists their columns and maps rows to a
/// `MultipartUpload` or an `UploadedPart` and back, so that a new column touches this codec and
/// one migration (`SQLiteBlobIndex.migrator`). `owner` is written once, at insert, and read
/// only by `migrate-index` (`SQLiteBlobIndex.exportMultipart`).
enum SQLiteMultipartRow {
    /// The columns, `id` first, in the order of `arguments(_:)`.
    static let columns = [
        "id", "key", "content_type", "cache_control", "content_disposition", "content_encoding", "expires_header", "user_metadata",
        "created", "expires", "completed_etag", "checksum", "content_language", "lock_mode", "lock_until", "legal_hold",
    ]

    /// Inserts `arguments(_:)` followed by the owner.
    static let insert = "INSERT INTO multipart_uploads (\((columns + ["owner"]).joined(separator: ", "))) VALUES ("
        + Array(repeating: "?", count: columns.count + 1).joined(separator: ", ") + ")"

    /// The arguments of `insert`, but the owner.
    static func arguments(_ upload: MultipartUpload) -> StatementArguments {
        let attributes = upload.attributes
        return [upload.id, Data(upload.key.bytes), attributes.contentType, attributes.cacheControl, attributes.contentDisposition,
                attributes.contentEncoding, attributes.expires, attributes.userMetadataText, upload.created, upload.expires,
                upload.completedETag, upload.checksum, attributes.contentLanguage, upload.lock?.mode?.rawValue,
                upload.lock?.retainUntil, upload.lock?.legalHold == true ? 1 : 0]
    }

    /// The upload of a `multipart_uploads` row; nil, reported to `invalid`, if its key fails validation.
    static func upload(from row: Row, reportingTo invalid: InvalidKeyRows?) -> MultipartUpload? {
        guard let key = InvalidKeyRows.key(row["key"] as Data, in: "multipart_uploads", reportingTo: invalid) else { return nil }
        return MultipartUpload(id: row["id"], key: key, attributes: SQLiteUploadRow.attributes(row, expiresColumn: "expires_header"),
                               created: row["created"], expires: row["expires"], completedETag: row["completed_etag"],
                               checksum: row["checksum"],
                               lock: ObjectLock(mode: row["lock_mode"], until: row["lock_until"], legalHold: (row["legal_hold"] as Int64? ?? 0) != 0))
    }

    // MARK: Parts

    /// The columns of `multipart_parts`, in the order of `arguments(_:of:)`.
    static let partColumns = ["upload", "number", "size", "md5", "modified", "checksum"]

    /// Inserts `arguments(_:of:)`, or overwrites the part of that number.
    static let upsertPart = "INSERT OR REPLACE INTO multipart_parts (\(partColumns.joined(separator: ", "))) VALUES ("
        + Array(repeating: "?", count: partColumns.count).joined(separator: ", ") + ")"

    /// The arguments of `upsertPart`.
    static func arguments(_ part: UploadedPart, of id: String) -> StatementArguments {
        [id, part.number, Int64(part.size), Data(part.md5), part.modified, part.checksum]
    }

    /// The part of a `multipart_parts` row.
    static func part(from row: Row) -> UploadedPart {
        UploadedPart(number: row["number"], size: UInt64(max(0, row["size"] as Int64)), md5: Array(row["md5"] as Data),
                     modified: row["modified"], checksum: row["checksum"])
    }
}

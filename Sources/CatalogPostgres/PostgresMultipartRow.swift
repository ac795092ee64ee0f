import BlobCatalog
import BlobCore
import Foundation
import PostgresClient

/// An S3 multipart upload as a row of PostgreSQL's `multipart_uploads` table, and a part as a
/// row of `multipart_parts`: the one place that lists their columns and maps rows to a
/// `MultipartUpload` or an `UploadedPart` and back, so that a new column touches this codec and
/// one migration (`PostgresSchema.steps`). `owner` is written once, at insert (or import).
enum PostgresMultipartRow {
    /// The columns, `id` first, in the order of `values(_:)`.
    static let columns = [
        "id", "key", "content_type", "cache_control", "content_disposition", "content_encoding", "expires_header", "user_metadata",
        "created", "expires", "completed_etag", "checksum", "content_language", "lock_mode", "lock_until", "legal_hold",
    ]

    /// Inserts `values(_:)` followed by the owner.
    static let insert = """
        INSERT INTO multipart_uploads (\((columns + ["owner"]).joined(separator: ", ")))
        VALUES (\((0...columns.count).map { "$\($0 + 1)" }.joined(separator: ", ")))
        """

    /// `insert`, keeping the row an id has already (`migrate-index` run again).
    static let importing = insert + " ON CONFLICT (id) DO NOTHING"

    /// The parameters of `insert`, but the owner.
    static func values(_ upload: MultipartUpload) -> [PostgresValue] {
        let optional = PostgresBlobIndex.optional
        let attributes = upload.attributes
        return [.text(upload.id), .bytes(upload.key.bytes), .text(attributes.contentType), optional(attributes.cacheControl),
                optional(attributes.contentDisposition), optional(attributes.contentEncoding), optional(attributes.expires),
                optional(attributes.userMetadataText), .int(upload.created), .int(upload.expires), optional(upload.completedETag),
                optional(upload.checksum), optional(attributes.contentLanguage), optional(upload.lock?.mode?.rawValue),
                upload.lock?.retainUntil.map { .int($0) } ?? .null, .text(upload.lock?.legalHold == true ? "t" : "f")]
    }

    /// The upload of a `multipart_uploads` row; nil, reported to `invalid`, if its key fails validation.
    static func upload(from row: PostgresRow, reportingTo invalid: InvalidKeyRows?) -> MultipartUpload? {
        guard let id = row.text("id"), let bytes = row.bytes("key"),
              let key = InvalidKeyRows.key(bytes, in: "multipart_uploads", reportingTo: invalid) else { return nil }
        return MultipartUpload(id: id, key: key, attributes: PostgresBlobIndex.attributes(row, expiresColumn: "expires_header"),
                               created: row.int("created") ?? 0, expires: row.int("expires") ?? 0, completedETag: row.text("completed_etag"),
                               checksum: row.text("checksum"),
                               lock: ObjectLock(mode: row.text("lock_mode"), until: row.int("lock_until"), legalHold: row.bool("legal_hold") ?? false))
    }

    // MARK: Parts

    /// The columns of `multipart_parts`, in the order of `values(_:of:)`.
    static let partColumns = ["upload", "number", "size", "md5", "modified", "checksum"]

    /// Inserts `values(_:of:)` unless the part's number has a row (`migrate-index` run again).
    static let insertPart = """
        INSERT INTO multipart_parts (\(partColumns.joined(separator: ", ")))
        VALUES (\(partColumns.indices.map { "$\($0 + 1)" }.joined(separator: ", "))) ON CONFLICT (upload, number) DO NOTHING
        """

    /// Inserts `values(_:of:)`, or overwrites the part of that number.
    static let upsertPart = """
        INSERT INTO multipart_parts (\(partColumns.joined(separator: ", ")))
        VALUES (\(partColumns.indices.map { "$\($0 + 1)" }.joined(separator: ", "))) ON CONFLICT (upload, number) DO UPDATE SET
        """ + " " + partColumns.dropFirst(2).map { "\($0) = excluded.\($0)" }.joined(separator: ", ")

    /// The parameters of `insertPart` and `upsertPart`.
    static func values(_ part: UploadedPart, of id: String) -> [PostgresValue] {
        [.text(id), .int(Int64(part.number)), .int(Int64(part.size)), .bytes(part.md5), .int(part.modified),
         PostgresBlobIndex.optional(part.checksum)]
    }

    /// The part of a `multipart_parts` row.
    static func part(from row: PostgresRow) -> UploadedPart {
        UploadedPart(number: Int(row.int("number") ?? 0), size: UInt64(max(0, row.int("size") ?? 0)), md5: row.bytes("md5") ?? [],
                     modified: row.int("modified") ?? 0, checksum: row.text("checksum"))
    }
}

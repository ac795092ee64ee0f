import BlobCatalog
import BlobCore
import Foundation
import PostgresClient

/// A tus upload as a row of PostgreSQL's `uploads` table: the one place that lists the columns
/// and maps a row to an `UploadRecord` and back, so that a new column touches this codec and
/// one migration (`PostgresSchema.steps`). `owner` is written once, at insert (or import); the
/// commit that completes an upload sets `completed_key` and `offset` itself.
enum PostgresUploadRow {
    /// The columns, `id` first, in the order of `values(_:)`.
    static let columns = [
        "id", "length", "offset", "hash_state", "metadata", "key", "content_type", "expires", "completed_key", "cache_control",
        "content_disposition", "content_encoding", "expires_header", "user_metadata", "content_language",
    ]

    /// Inserts `values(_:)` followed by the owner.
    static let insert = """
        INSERT INTO uploads (\((columns + ["owner"]).map(quoted).joined(separator: ", ")))
        VALUES (\((0...columns.count).map { "$\($0 + 1)" }.joined(separator: ", ")))
        """

    /// `insert`, keeping the row an id has already (`migrate-index` run again).
    static let importing = insert + " ON CONFLICT (id) DO NOTHING"

    /// Overwrites the id's row (but its owner) with `values(_:)`.
    static let update = "UPDATE uploads SET "
        + columns.indices.dropFirst().map { "\(quoted(columns[$0])) = $\($0 + 1)" }.joined(separator: ", ") + " WHERE id = $1"

    /// `offset` is a reserved word in PostgreSQL.
    private static func quoted(_ column: String) -> String {
        column == "offset" ? "\"offset\"" : column
    }

    /// The parameters of `update`, and of `insert` with the owner after them.
    static func values(_ upload: UploadRecord) -> [PostgresValue] {
        let optional = PostgresBlobIndex.optional
        let attributes = upload.attributes
        return [.text(upload.id), upload.length.map { .int(Int64($0)) } ?? .null, .int(Int64(upload.offset)), .bytes(upload.hashState),
                .text(upload.metadata), upload.key.map { .bytes($0.bytes) } ?? .null, .text(attributes.contentType), .int(upload.expires),
                upload.completedKey.map { .bytes($0.bytes) } ?? .null, optional(attributes.cacheControl),
                optional(attributes.contentDisposition), optional(attributes.contentEncoding), optional(attributes.expires),
                optional(attributes.userMetadataText), optional(attributes.contentLanguage)]
    }

    /// The upload of an `uploads` row; a key or completed key that fails validation is nil, and
    /// reported to `invalid`.
    static func upload(from row: PostgresRow, reportingTo invalid: InvalidKeyRows?) -> UploadRecord? {
        guard let id = row.text("id") else { return nil }
        return UploadRecord(
            id: id, length: row.int("length").map { UInt64(max(0, $0)) }, offset: UInt64(max(0, row.int("offset") ?? 0)),
            hashState: row.bytes("hash_state") ?? [], metadata: row.text("metadata") ?? "",
            key: row.bytes("key").flatMap { InvalidKeyRows.key($0, in: "uploads", reportingTo: invalid) },
            attributes: PostgresBlobIndex.attributes(row, expiresColumn: "expires_header"), expires: row.int("expires") ?? 0,
            completedKey: row.bytes("completed_key").flatMap { InvalidKeyRows.key($0, in: "uploads", reportingTo: invalid) })
    }
}

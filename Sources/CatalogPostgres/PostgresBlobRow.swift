import BlobCatalog
import BlobCore
import Foundation
import PostgresClient

/// A blob record as a row of PostgreSQL's `blobs` table: the one place that lists the columns
/// and maps a row to a `BlobRecord` and back, so that a new column touches this codec and one
/// migration (`PostgresSchema.steps`).
enum PostgresBlobRow {
    /// The columns, `key` first, in the order of `values(_:)`.
    static let columns = [
        "key", "version", "size", "sha256", "content_type", "modified", "cache_control", "content_disposition", "content_encoding",
        "expires", "user_metadata", "md5", "parts", "checksum", "part_sizes", "content_language", "part_checksums",
        "ttl_expires", "expires_at", "versioned", "lock_mode", "lock_until", "legal_hold",
    ]

    /// The column list, for `SELECT` and `INSERT`.
    static let selection = columns.joined(separator: ", ")

    /// Inserts `values(_:)` unless the key has a row.
    static let insert = """
        INSERT INTO blobs (\(selection)) VALUES (\(columns.indices.map { "$\($0 + 1)" }.joined(separator: ", ")))
        ON CONFLICT (key) DO NOTHING
        """

    /// Overwrites the key's row with `values(_:)`.
    static let update = "UPDATE blobs SET "
        + columns.indices.dropFirst().map { "\(columns[$0]) = $\($0 + 1)" }.joined(separator: ", ") + " WHERE key = $1"

    /// The parameters of `insert` and `update`.
    static func values(_ record: BlobRecord) -> [PostgresValue] {
        let optional = PostgresBlobIndex.optional
        let attributes = record.attributes
        return [.bytes(record.key.bytes), .text(record.version), .int(Int64(record.size)), .bytes(record.sha256),
                .text(record.contentType), .int(record.modified), optional(record.cacheControl), optional(record.contentDisposition),
                optional(attributes.contentEncoding), optional(attributes.expires), optional(attributes.userMetadataText),
                record.md5.map { .bytes($0) } ?? .null, record.parts.map { .int(Int64($0)) } ?? .null, optional(record.checksum),
                optional(record.partSizesText), optional(attributes.contentLanguage), optional(record.partChecksumsText),
                record.ttlExpires.map { .int($0) } ?? .null, record.expiresAt.map { .int($0) } ?? .null,
                .text(record.versioned ? "t" : "f"), record.lock.mode.map { .text($0.rawValue) } ?? .null,
                record.lock.retainUntil.map { .int($0) } ?? .null, .text(record.lock.legalHold ? "t" : "f")]
    }

    /// The record of a row selected with `selection`; nil if the key or a required column is bad.
    static func record(from row: PostgresRow, reportingTo invalid: InvalidKeyRows? = nil) -> BlobRecord? {
        guard let bytes = row.bytes("key"), let key = InvalidKeyRows.key(bytes, in: "blobs", reportingTo: invalid), let version = row.text("version"),
              let sha256 = row.bytes("sha256") else { return nil }
        var record = BlobRecord(key: key, version: version, size: UInt64(max(0, row.int("size") ?? 0)), sha256: sha256,
                          attributes: PostgresBlobIndex.attributes(row, expiresColumn: "expires"), modified: row.int("modified") ?? 0,
                          md5: row.bytes("md5"), parts: row.int("parts").map { Int($0) },
                          partSizes: BlobRecord.partSizes(fromText: row.text("part_sizes")),
                          partChecksums: BlobRecord.partChecksums(fromText: row.text("part_checksums")), checksum: row.text("checksum"),
                          ttlExpires: row.int("ttl_expires"), expiresAt: row.int("expires_at"))
        record.versioned = row.bool("versioned") ?? false
        record.lock = ObjectLock(mode: row.text("lock_mode").flatMap(ObjectLock.Mode.init(rawValue:)), retainUntil: row.int("lock_until"),
                                 legalHold: row.bool("legal_hold") ?? false)
        return record
    }
}

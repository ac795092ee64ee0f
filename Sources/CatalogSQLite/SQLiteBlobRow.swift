import BlobCatalog
import BlobCore
import Foundation
import GRDB

/// A blob record as a row of SQLite's `blobs` table: the one place that lists the columns and
/// maps a row to a `BlobRecord` and back, so that a new column touches this codec and one
/// migration (`SQLiteBlobIndex.migrator`).
enum SQLiteBlobRow {
    /// The columns, `key` first, in the order of `arguments(_:)`.
    static let columns = [
        "key", "version", "size", "sha256", "content_type", "modified", "cache_control", "content_disposition", "content_encoding",
        "expires", "user_metadata", "md5", "parts", "checksum", "part_sizes", "content_language", "part_checksums",
        "ttl_expires", "expires_at", "versioned", "lock_mode", "lock_until", "legal_hold",
    ]

    /// Inserts `arguments(_:)`, or overwrites the key's row.
    static let upsert = "INSERT INTO blobs (\(columns.joined(separator: ", "))) VALUES ("
        + Array(repeating: "?", count: columns.count).joined(separator: ", ") + ") ON CONFLICT(key) DO UPDATE SET "
        + columns.dropFirst().map { "\($0) = excluded.\($0)" }.joined(separator: ", ")

    /// The arguments of `upsert`.
    static func arguments(_ record: BlobRecord) -> StatementArguments {
        let attributes = record.attributes
        return [Data(record.key.bytes), record.version, Int64(record.size), Data(record.sha256), record.contentType, record.modified,
                record.cacheControl, record.contentDisposition, attributes.contentEncoding, attributes.expires,
                attributes.userMetadataText, record.md5.map { Data($0) }, record.parts, record.checksum, record.partSizesText,
                attributes.contentLanguage, record.partChecksumsText, record.ttlExpires, record.expiresAt, record.versioned ? 1 : 0,
                record.lock.mode?.rawValue, record.lock.retainUntil, record.lock.legalHold ? 1 : 0]
    }

    /// The record of a `blobs` row; nil, reported to `invalid`, if its key fails validation.
    static func record(from row: Row, reportingTo invalid: InvalidKeyRows? = nil) -> BlobRecord? {
        let keyBytes: Data = row["key"]
        guard let key = InvalidKeyRows.key(keyBytes, in: "blobs", reportingTo: invalid) else { return nil }
        let size: Int64 = row["size"]
        let sha256: Data = row["sha256"]
        var record = BlobRecord(key: key, version: row["version"], size: UInt64(max(0, size)),
                          sha256: Array(sha256),
                          attributes: BlobAttributes(contentType: row["content_type"], cacheControl: row["cache_control"],
                                                     contentDisposition: row["content_disposition"],
                                                     contentEncoding: row["content_encoding"], contentLanguage: row["content_language"],
                                                     expires: row["expires"],
                                                     userMetadata: BlobAttributes.userMetadata(fromText: row["user_metadata"])),
                          modified: row["modified"], md5: (row["md5"] as Data?).map { Array($0) }, parts: row["parts"],
                          partSizes: BlobRecord.partSizes(fromText: row["part_sizes"]),
                          partChecksums: BlobRecord.partChecksums(fromText: row["part_checksums"]), checksum: row["checksum"],
                          ttlExpires: row["ttl_expires"], expiresAt: row["expires_at"])
        record.versioned = (row["versioned"] as Int64? ?? 0) != 0
        record.lock = ObjectLock(mode: (row["lock_mode"] as String?).flatMap(ObjectLock.Mode.init(rawValue:)),
                                 retainUntil: row["lock_until"], legalHold: (row["legal_hold"] as Int64? ?? 0) != 0)
        return record
    }
}

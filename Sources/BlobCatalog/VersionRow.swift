import BlobCore

/// A noncurrent version and the number of its row.
public struct VersionRow: Sendable, Equatable {
    /// The row's number: rows of a key are made in `seq` order.
    public var seq: Int64
    /// The version (never latest as it comes from a backend; the decisions set that).
    public var version: BlobVersion

    /// The columns a version keeps, the same in `blobs` and `blob_versions` on every backend
    /// (listed here, not taken from a row codec, so that a column `blobs` alone gains needs no
    /// copy in `blob_versions`): archiving and promoting copy them between the tables.
    public static let columns = [
        "key", "version", "size", "sha256", "content_type", "modified", "cache_control", "content_disposition", "content_encoding",
        "expires", "user_metadata", "md5", "parts", "checksum", "part_sizes", "content_language", "part_checksums", "versioned",
        "ttl_expires", "expires_at", "lock_mode", "lock_until", "legal_hold",
    ].joined(separator: ", ")

    /// Row `seq` holding `version`.
    public init(seq: Int64, version: BlobVersion) {
        self.seq = seq
        self.version = version
    }
}

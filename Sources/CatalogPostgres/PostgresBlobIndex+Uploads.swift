import BlobCatalog
import BlobCore
import Foundation
import PostgresClient

/// The index in PostgreSQL: resumable (tus) uploads and the claims that keep one append at a time.
extension PostgresBlobIndex {
    // MARK: Resumable uploads (tus)

    public func insert(_ upload: UploadRecord, owner: String?, limit: Int) throws(StoreError) {
        try insertCounting(owner: owner, limit: limit) { connection throws(PostgresError) in
            try connection.execute("""
                INSERT INTO uploads (id, length, "offset", hash_state, metadata, key, content_type, expires, completed_key,
                                     cache_control, content_disposition, content_encoding, expires_header, user_metadata, owner)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
                """, Self.values(upload) + [Self.optional(owner)])
        }
    }

    public func upload(_ id: String) throws(StoreError) -> UploadRecord? {
        try rows("SELECT * FROM uploads WHERE id = $1", [.text(id)]).first.flatMap { Self.upload(from: $0, reportingTo: invalidKeys) }
    }

    public func save(_ upload: UploadRecord) throws(StoreError) {
        try execute("""
            UPDATE uploads SET length = $2, "offset" = $3, hash_state = $4, metadata = $5, key = $6, content_type = $7, expires = $8,
                completed_key = $9, cache_control = $10, content_disposition = $11, content_encoding = $12, expires_header = $13,
                user_metadata = $14
            WHERE id = $1
            """, Self.values(upload))
    }

    public func removeUpload(_ id: String) throws(StoreError) {
        try execute("DELETE FROM uploads WHERE id = $1", [.text(id)])
    }

    public func expiredUploads(now: Int64) throws(StoreError) -> [String] {
        try texts("SELECT id FROM uploads WHERE expires <= $1", [.int(now)], column: "id")
    }

    /// Claims upload `id` (tus or multipart) for `node` until `until` (seconds since the
    /// epoch): false if another node holds an unexpired claim. An append holds the claim while
    /// it runs, so an append to the same upload on another node is refused, not interleaved;
    /// the claim of a node that died lapses at `until`.
    public func claimUpload(_ id: String, node: String, until: Int64) throws(StoreError) -> Bool {
        try run { () throws(PostgresError) in
            try pool.withConnection { connection throws(PostgresError) in
                try connection.execute("""
                    INSERT INTO claims (id, node, until) VALUES ($1, $2, $3)
                    ON CONFLICT (id) DO UPDATE SET node = excluded.node, until = excluded.until
                    WHERE claims.node = excluded.node OR claims.until < $4
                    """, [.text(id), .text(node), .int(until), .int(Int64(time(nil)))]).affected == 1
            }
        }
    }

    /// Gives up `node`'s claim on upload `id`.
    public func releaseUpload(_ id: String, node: String) {
        _ = try? execute("DELETE FROM claims WHERE id = $1 AND node = $2", [.text(id), .text(node)])
    }

    static func values(_ upload: UploadRecord) -> [PostgresValue] {
        let attributes = upload.attributes
        return [.text(upload.id), upload.length.map { .int(Int64($0)) } ?? .null, .int(Int64(upload.offset)), .bytes(upload.hashState),
                .text(upload.metadata), upload.key.map { .bytes($0.bytes) } ?? .null, .text(attributes.contentType), .int(upload.expires),
                upload.completedKey.map { .bytes($0.bytes) } ?? .null, optional(attributes.cacheControl),
                optional(attributes.contentDisposition), optional(attributes.contentEncoding), optional(attributes.expires),
                optional(attributes.userMetadataText)]
    }

    /// The upload of an `uploads` row; a key or completed key that fails validation is nil, and
    /// reported to `invalid`.
    static func upload(from row: PostgresRow, reportingTo invalid: InvalidKeyRows?) -> UploadRecord? {
        guard let id = row.text("id") else { return nil }
        return UploadRecord(
            id: id, length: row.int("length").map { UInt64(max(0, $0)) }, offset: UInt64(max(0, row.int("offset") ?? 0)),
            hashState: row.bytes("hash_state") ?? [], metadata: row.text("metadata") ?? "",
            key: row.bytes("key").flatMap { InvalidKeyRows.key($0, in: "uploads", reportingTo: invalid) },
            attributes: attributes(row, expiresColumn: "expires_header"), expires: row.int("expires") ?? 0,
            completedKey: row.bytes("completed_key").flatMap { InvalidKeyRows.key($0, in: "uploads", reportingTo: invalid) })
    }
}

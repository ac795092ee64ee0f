import BlobCatalog
import BlobCore
import Foundation
import PostgresClient

/// The index in PostgreSQL: resumable (tus) uploads and the claims that keep one append at a time.
extension PostgresBlobIndex {
    // MARK: Resumable uploads (tus)

    public func insert(_ upload: UploadRecord, owner: String?, limit: Int) throws(StoreError) {
        try insertCounting(owner: owner, limit: limit) { connection throws(PostgresError) in
            try connection.execute(PostgresUploadRow.insert, PostgresUploadRow.values(upload) + [Self.optional(owner)])
        }
    }

    public func upload(_ id: String) throws(StoreError) -> UploadRecord? {
        try rows("SELECT * FROM uploads WHERE id = $1", [.text(id)]).first
            .flatMap { PostgresUploadRow.upload(from: $0, reportingTo: invalidKeys) }
    }

    public func owner(ofUpload id: String) throws(StoreError) -> String? {
        try rows("SELECT owner FROM uploads WHERE id = $1", [.text(id)]).first?.text("owner")
    }

    public func save(_ upload: UploadRecord) throws(StoreError) {
        try execute(PostgresUploadRow.update, PostgresUploadRow.values(upload))
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
                    """, [.text(id), .text(node), .int(until), .int(clock.seconds)]).affected == 1
            }
        }
    }

    /// Gives up `node`'s claim on upload `id`.
    public func releaseUpload(_ id: String, node: String) {
        _ = try? execute("DELETE FROM claims WHERE id = $1 AND node = $2", [.text(id), .text(node)])
    }
}

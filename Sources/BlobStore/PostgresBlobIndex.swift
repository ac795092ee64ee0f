import Foundation
import Logging
import PostgresClient

/// The index in PostgreSQL, shared by every node of a cluster (see README "Several nodes").
///
/// Every read goes to the database: there is no per-node cache, so a node sees another's
/// commit at once. A commit is decided inside its transaction: the current row is read
/// `FOR UPDATE` (or, for a new key, inserted with `ON CONFLICT DO NOTHING`, which waits for a
/// concurrent insert of the same key and then reports it), the condition is evaluated against
/// it, and only then is the row written. Concurrent commits of one node share a transaction
/// (`GroupCommit`); with `synchronous_commit` on, COMMIT returns once the WAL is flushed.
public final class PostgresBlobIndex: BlobIndex, UploadIndex, BucketIndex, MultipartIndex {
    private let pool: PostgresPool
    private let commits = GroupCommit()
    /// Concurrent point reads share round trips (see `ReadBatch`: a read still sees every
    /// commit acknowledged before it began).
    private let reads: ReadBatch
    /// Runs before each group commit's transaction with the batch's records (the folders of
    /// their files are fsynced there).
    private let beforeCommit: @Sendable ([BlobRecord]) throws(StoreError) -> Void
    /// Where rows whose key fails validation are reported.
    private let invalidKeys: InvalidKeyRows

    /// Connects to `url` (creating or upgrading the schema) with up to `connections` connections.
    public init(url: String, connections: Int, invalidKeys: InvalidKeyRows = InvalidKeyRows(logger: Logger(label: "blobd.index")),
                beforeCommit: @escaping @Sendable ([BlobRecord]) throws(StoreError) -> Void = { _ in }) throws(StoreError) {
        let pool = PostgresPool(url: url, size: connections)
        self.pool = pool
        self.beforeCommit = beforeCommit
        self.invalidKeys = invalidKeys
        reads = ReadBatch(maxInFlight: 2) { keys throws(StoreError) in
            do throws(PostgresError) {
                return try pool.withConnection { connection throws(PostgresError) in try Self.fetch(keys, in: connection) }
            } catch {
                throw Self.storeError(error)
            }
        }
        try run { () throws(PostgresError) in try PostgresSchema.migrate(pool) }
    }

    // MARK: Blobs

    static let columns = """
        key, version, size, sha256, content_type, modified, cache_control, content_disposition, content_encoding, expires,
        user_metadata, md5, parts, checksum, part_sizes, content_language, part_checksums
        """

    public func record(for key: BlobKey) throws(StoreError) -> BlobRecord? {
        try reads.record(for: key)
    }

    public func record(for key: BlobKey, then completion: @escaping @Sendable (Result<BlobRecord?, StoreError>) -> Void) {
        reads.record(for: key, then: completion)
    }

    public func commit(_ record: BlobRecord, completingUpload: String?, if condition: @escaping (BlobRecord?) -> Bool,
                       then completion: @escaping (Result<IndexCommit, StoreError>) -> Void) {
        let request = CommitRequest(record: record, completingUpload: completingUpload, condition: condition, completion: completion)
        commits.submit(request, commitBatch: { [self] in commitBatch($0) })
    }

    /// One transaction for the batch: the rows of its keys are read and locked in one statement
    /// (in key order), each commit is decided in turn against what is there (including the
    /// batch's own earlier commits), and the replaced versions go to `garbage` in one statement at
    /// the end. New keys are inserted in the batch's order: two nodes inserting the same new keys
    /// in opposite orders deadlock, which PostgreSQL detects (40P01), and the transaction runs again.
    private func commitBatch(_ batch: [CommitRequest]) {
        do {
            try beforeCommit(batch.map(\.record))
            let results = try run { () throws(PostgresError) in
                try pool.transaction { connection throws(PostgresError) in
                    var current = try Self.fetchForUpdate(Set(batch.map(\.record.key)).sorted(), in: connection)
                    var garbage: [String] = []
                    let results = try batch.map { request throws(PostgresError) in
                        try Self.apply(request, current: &current, garbage: &garbage, in: connection)
                    }
                    try Self.addGarbage(garbage, in: connection)
                    return results
                }
            }
            for (request, result) in zip(batch, results) { request.result = result }
        } catch {
            for request in batch { request.result = .failure(error) }
        }
    }

    /// One commit inside the batch's transaction, decided against `current` (the locked rows,
    /// updated as the batch goes); the version it replaces joins `garbage`. The condition is
    /// evaluated once per attempt: a retried transaction (serialization failure) evaluates it
    /// again against what is there then.
    private static func apply(_ request: CommitRequest, current: inout [BlobKey: BlobRecord], garbage: inout [String],
                              in connection: PostgresConnection) throws(PostgresError) -> Result<IndexCommit, StoreError> {
        let record = request.record
        var existing = current[record.key]
        let condition = request.condition
        guard condition?(existing) ?? false else { return .failure(.preconditionFailed) }
        if existing == nil {
            let inserted = try connection.execute("""
                INSERT INTO blobs (\(columns)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
                ON CONFLICT (key) DO NOTHING
                """, values(record))
            if inserted.affected == 1 {
                try complete(request, in: connection)
                current[record.key] = record
                return .success(.created)
            }
            // Another node created the key meanwhile: decide again against its row.
            existing = try fetchForUpdate([record.key], in: connection)[record.key]
            guard condition?(existing) ?? false else { return .failure(.preconditionFailed) }
        }
        guard let previous = existing else { return .failure(.preconditionFailed) }
        try connection.execute("""
            UPDATE blobs SET version = $2, size = $3, sha256 = $4, content_type = $5, modified = $6, cache_control = $7,
                content_disposition = $8, content_encoding = $9, expires = $10, user_metadata = $11, md5 = $12, parts = $13,
                checksum = $14, part_sizes = $15, content_language = $16, part_checksums = $17
            WHERE key = $1
            """, values(record))
        garbage.append(previous.version)
        try complete(request, in: connection)
        current[record.key] = record
        return .success(.replaced(previous: previous))
    }

    private static func complete(_ request: CommitRequest, in connection: PostgresConnection) throws(PostgresError) {
        guard let upload = request.completingUpload else { return }
        try connection.execute("UPDATE uploads SET completed_key = $1, \"offset\" = $2 WHERE id = $3",
                               [.bytes(request.record.key.bytes), .int(Int64(request.record.size)), .text(upload)])
    }

    private static func values(_ record: BlobRecord) -> [PostgresValue] {
        [.bytes(record.key.bytes), .text(record.version), .int(Int64(record.size)), .bytes(record.sha256), .text(record.contentType),
         .int(record.modified), optional(record.cacheControl), optional(record.contentDisposition),
         optional(record.attributes.contentEncoding), optional(record.attributes.expires), optional(record.attributes.userMetadataText),
         record.md5.map { .bytes($0) } ?? .null, record.parts.map { .int(Int64($0)) } ?? .null, optional(record.checksum),
         optional(record.partSizesText), optional(record.attributes.contentLanguage), optional(record.partChecksumsText)]
    }

    public func remove(_ key: BlobKey, if condition: (BlobRecord) -> Bool) throws(StoreError) -> BlobRecord {
        let result: Result<BlobRecord, StoreError> = try run { () throws(PostgresError) in
            try pool.transaction { connection throws(PostgresError) in
                guard let current = try Self.fetchForUpdate([key], in: connection)[key] else { return .failure(.notFound) }
                guard condition(current) else { return .failure(.preconditionFailed) }
                try connection.execute("DELETE FROM blobs WHERE key = $1", [.bytes(key.bytes)])
                try Self.addGarbage([current.version], in: connection)
                return .success(current)
            }
        }
        return try result.get()
    }

    public func list(prefix: [UInt8], after: [UInt8]?, limit: Int) throws(StoreError) -> [BlobRecord] {
        // A row whose key fails validation is reported and skipped; the page is filled up from
        // the rows after it, so a run of such rows never looks like the end of the listing.
        var records: [BlobRecord] = []
        var cursor = after
        while records.count < limit {
            let wanted = limit - records.count
            let page = try rows(prefix: prefix, after: cursor, limit: wanted)
            records += page.compactMap { Self.record(from: $0, reportingTo: invalidKeys) }
            guard page.count == wanted, let last = page.last?.bytes("key") else { break }
            cursor = last
        }
        return records
    }

    /// Up to `limit` rows of `blobs` in key order, keys starting with `prefix` and after `after`.
    private func rows(prefix: [UInt8], after: [UInt8]?, limit: Int) throws(StoreError) -> [PostgresRow] {
        // bytea compares bytewise, which is the listing order.
        // From `after` (exclusive) when it sorts at or past the prefix, else from the prefix.
        let strict = after.map { !$0.lexicographicallyPrecedes(prefix) } ?? false
        let lower = strict ? after ?? prefix : prefix
        let upper = SQLiteBlobIndex.upperBound(of: prefix)
        let sql = "SELECT \(Self.columns) FROM blobs WHERE key \(strict ? ">" : ">=") $1"
            + (upper == nil ? " AND $2::bytea IS NULL" : " AND key < $2") + " ORDER BY key LIMIT $3"
        return try run { () throws(PostgresError) in
            try pool.withConnection { connection throws(PostgresError) in
                try connection.execute(sql, [.bytes(lower), upper.map { .bytes($0) } ?? .null, .int(Int64(limit))]).rows
            }
        }
    }

    // MARK: Garbage (deferred reclaim)

    /// Every version waiting to be reclaimed, whatever its age.
    public func garbage() throws(StoreError) -> [String] {
        try run { () throws(PostgresError) in
            try pool.withConnection { connection throws(PostgresError) in
                try connection.execute("SELECT version FROM garbage").rows.compactMap { $0.text("version") }
            }
        }
    }

    /// Nothing to do: in a shared index a garbage row goes only when `reclaim` removed its file
    /// after the grace period.
    public func collectedGarbage(_ version: String) {}

    /// Nothing to do: one node's start must never forget garbage that is the cluster's.
    public func clearGarbage() throws(StoreError) {}

    /// Records replaced or removed versions, whose files go after the grace period.
    private static func addGarbage(_ versions: [String], in connection: PostgresConnection) throws(PostgresError) {
        guard !versions.isEmpty else { return }
        try connection.execute("INSERT INTO garbage (version, since) SELECT unnest($1::text[]), $2 ON CONFLICT (version) DO NOTHING",
                               [.textArray(versions), .int(Int64(time(nil)))])
    }

    /// Versions replaced or removed at least `grace` seconds ago, up to `limit`, if this node
    /// holds the cluster's reclaim lock (a transaction-level advisory lock); `remove` unlinks
    /// each file, after which its row goes. Returns how many were reclaimed; 0 when another
    /// node is reclaiming.
    func reclaim(olderThan grace: Int64, limit: Int, remove: (String) -> Void) throws(StoreError) -> Int {
        try run { () throws(PostgresError) in
            try pool.transaction { connection throws(PostgresError) in
                guard try connection.execute("SELECT pg_try_advisory_xact_lock(\(PostgresSchema.reclaimLock)) AS locked")
                    .rows.first?.bool("locked") == true else { return 0 }
                let due = try connection.execute("""
                    SELECT version FROM garbage WHERE since <= $1 AND NOT EXISTS (SELECT 1 FROM blobs WHERE blobs.version = garbage.version)
                    ORDER BY since LIMIT $2
                    """, [.int(Int64(time(nil)) - grace), .int(Int64(limit))]).rows.compactMap { $0.text("version") }
                for version in due {
                    remove(version)
                    try connection.execute("DELETE FROM garbage WHERE version = $1", [.text(version)])
                }
                return due.count
            }
        }
    }

    /// True if `version` was replaced or deleted and waits out its grace period.
    func isGarbage(_ version: String) throws(StoreError) -> Bool {
        try exists("SELECT EXISTS (SELECT 1 FROM garbage WHERE version = $1) AS found", [.text(version)])
    }

    // MARK: Versions, totals

    public func containsVersion(_ version: String) throws(StoreError) -> Bool {
        try exists("SELECT EXISTS (SELECT 1 FROM blobs WHERE version = $1) AS found", [.text(version)])
    }

    public func unfinishedUploads() throws(StoreError) -> [String] {
        try texts("SELECT id FROM uploads WHERE completed_key IS NULL", [], column: "id")
    }

    public func allVersions() throws(StoreError) -> Set<String> {
        Set(try texts("SELECT version FROM blobs", [], column: "version"))
    }

    public func versions(inFolder folder: String) throws(StoreError) -> Set<String> {
        let upper = String(decoding: SQLiteBlobIndex.upperBound(of: Array(folder.utf8)) ?? [0xFF], as: UTF8.self)
        return Set(try texts("SELECT version FROM blobs WHERE version >= $1 AND version < $2", [.text(folder), .text(upper)],
                             column: "version"))
    }

    public func totals() throws(StoreError) -> (count: Int, bytes: UInt64) {
        try run { () throws(PostgresError) in
            try pool.withConnection { connection throws(PostgresError) in
                let row = try connection.execute("SELECT count(*) AS count, coalesce(sum(size), 0)::bigint AS bytes FROM blobs").rows.first
                return (Int(row?.int("count") ?? 0), UInt64(max(0, row?.int("bytes") ?? 0)))
            }
        }
    }

    // MARK: Buckets (S3)

    public func createBucket(_ bucket: Bucket) throws(StoreError) -> Bool {
        try run { () throws(PostgresError) in
            try pool.withConnection { connection throws(PostgresError) in
                try connection.execute("INSERT INTO buckets (name, created, region) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING",
                                       [.text(bucket.name), .int(bucket.created), Self.optional(bucket.region)]).affected > 0
            }
        }
    }

    public func bucket(_ name: String) throws(StoreError) -> Bucket? {
        try run { () throws(PostgresError) in
            try pool.withConnection { connection throws(PostgresError) in
                try connection.execute("SELECT name, created, region FROM buckets WHERE name = $1", [.text(name)]).rows.first
                    .map(Self.bucket(from:))
            }
        }
    }

    public func buckets() throws(StoreError) -> [Bucket] {
        try run { () throws(PostgresError) in
            try pool.withConnection { connection throws(PostgresError) in
                try connection.execute("SELECT name, created, region FROM buckets ORDER BY name COLLATE \"C\"").rows.map(Self.bucket(from:))
            }
        }
    }

    private static func bucket(from row: PostgresRow) -> Bucket {
        Bucket(name: row.text("name") ?? "", created: row.int("created") ?? 0, region: row.text("region"))
    }

    public func removeBucket(_ name: String) throws(StoreError) {
        let prefix = Array((name + "/").utf8)
        let upper = SQLiteBlobIndex.upperBound(of: prefix) ?? [0xFF]
        let result: Result<Void, StoreError> = try run { () throws(PostgresError) in
            try pool.transaction { connection throws(PostgresError) in
                guard try connection.execute("SELECT created FROM buckets WHERE name = $1 FOR UPDATE", [.text(name)]).count > 0 else {
                    return .failure(.bucketNotFound)
                }
                let used = try connection.execute("SELECT EXISTS (SELECT 1 FROM blobs WHERE key >= $1 AND key < $2) AS found",
                                                  [.bytes(prefix), .bytes(upper)]).rows.first?.bool("found") ?? false
                guard !used else { return .failure(.bucketNotEmpty) }
                try connection.execute("DELETE FROM buckets WHERE name = $1", [.text(name)])
                return .success(())
            }
        }
        try result.get()
    }

    // MARK: Multipart uploads (S3)

    public func insertMultipart(_ upload: MultipartUpload, owner: String?, limit: Int) throws(StoreError) {
        try insertCounting(owner: owner, limit: limit) { connection throws(PostgresError) in
            try connection.execute("""
                INSERT INTO multipart_uploads (id, key, content_type, cache_control, content_disposition, content_encoding,
                    expires_header, user_metadata, created, expires, completed_etag, checksum, content_language, owner)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
                """, Self.values(upload) + [Self.optional(owner)])
        }
    }

    /// Runs `insert` in a transaction that first counts `owner`'s unfinished uploads (see
    /// `MultipartIndex.insertMultipart`), under an advisory lock on the owner so that concurrent
    /// creations on several nodes count one another.
    private func insertCounting(owner: String?, limit: Int,
                                _ insert: (PostgresConnection) throws(PostgresError) -> Void) throws(StoreError) {
        let refused: Bool = try run { () throws(PostgresError) in
            try pool.transaction { connection throws(PostgresError) in
                if let owner, limit > 0 {
                    try connection.execute("SELECT pg_advisory_xact_lock(hashtext($1))", [.text(owner)])
                    let open = try connection.execute("""
                        SELECT (SELECT COUNT(*) FROM uploads WHERE owner = $1 AND completed_key IS NULL AND expires > $2)
                             + (SELECT COUNT(*) FROM multipart_uploads WHERE owner = $1 AND completed_etag IS NULL AND expires > $2) AS n
                        """, [.text(owner), .int(Int64(time(nil)))]).rows.first?.int("n") ?? 0
                    if open >= Int64(limit) { return true }
                }
                try insert(connection)
                return false
            }
        }
        if refused { throw .tooManyUploads(limit: limit) }
    }

    public func multipart(_ id: String) throws(StoreError) -> MultipartUpload? {
        try rows("SELECT * FROM multipart_uploads WHERE id = $1", [.text(id)]).first.flatMap { Self.multipart(from: $0, reportingTo: invalidKeys) }
    }

    public func multipartUploads(prefix: [UInt8]) throws(StoreError) -> [MultipartUpload] {
        let upper = SQLiteBlobIndex.upperBound(of: prefix) ?? [0xFF]
        return try rows("""
            SELECT * FROM multipart_uploads WHERE key >= $1 AND key < $2 AND completed_etag IS NULL ORDER BY key, created
            """, [.bytes(prefix), .bytes(upper)]).compactMap { Self.multipart(from: $0, reportingTo: invalidKeys) }
    }

    public func savePart(_ part: UploadedPart, of id: String) throws(StoreError) -> UploadedPart? {
        let result: Result<UploadedPart?, StoreError> = try run { () throws(PostgresError) in
            try pool.transaction { connection throws(PostgresError) in
                guard try connection.execute("SELECT id FROM multipart_uploads WHERE id = $1 AND completed_etag IS NULL FOR UPDATE",
                                             [.text(id)]).count > 0 else { return .failure(.uploadNotFound) }
                let previous = try connection.execute("SELECT * FROM multipart_parts WHERE upload = $1 AND number = $2",
                                                      [.text(id), .int(Int64(part.number))]).rows.first.map(Self.part(from:))
                try connection.execute("""
                    INSERT INTO multipart_parts (upload, number, size, md5, modified, checksum) VALUES ($1, $2, $3, $4, $5, $6)
                    ON CONFLICT (upload, number) DO UPDATE SET size = excluded.size, md5 = excluded.md5, modified = excluded.modified,
                        checksum = excluded.checksum
                    """, Self.values(part, of: id))
                return .success(previous)
            }
        }
        return try result.get()
    }

    public func parts(of id: String) throws(StoreError) -> [UploadedPart] {
        try rows("SELECT * FROM multipart_parts WHERE upload = $1 ORDER BY number", [.text(id)]).map(Self.part(from:))
    }

    public func markCompleted(_ id: String, etag: String, checksum: String?) throws(StoreError) {
        try transaction { connection throws(PostgresError) in
            try connection.execute("UPDATE multipart_uploads SET completed_etag = $1, checksum = $2 WHERE id = $3",
                                   [.text(etag), Self.optional(checksum), .text(id)])
            try connection.execute("DELETE FROM multipart_parts WHERE upload = $1", [.text(id)])
        }
    }

    public func removeMultipart(_ id: String) throws(StoreError) {
        try transaction { connection throws(PostgresError) in
            try connection.execute("DELETE FROM multipart_parts WHERE upload = $1", [.text(id)])
            try connection.execute("DELETE FROM multipart_uploads WHERE id = $1", [.text(id)])
        }
    }

    public func expiredMultipartUploads(now: Int64) throws(StoreError) -> [String] {
        try texts("SELECT id FROM multipart_uploads WHERE expires <= $1", [.int(now)], column: "id")
    }

    private static func part(from row: PostgresRow) -> UploadedPart {
        UploadedPart(number: Int(row.int("number") ?? 0), size: UInt64(max(0, row.int("size") ?? 0)), md5: row.bytes("md5") ?? [],
                     modified: row.int("modified") ?? 0, checksum: row.text("checksum"))
    }

    private static func values(_ part: UploadedPart, of id: String) -> [PostgresValue] {
        [.text(id), .int(Int64(part.number)), .int(Int64(part.size)), .bytes(part.md5), .int(part.modified), optional(part.checksum)]
    }

    private static func values(_ upload: MultipartUpload) -> [PostgresValue] {
        let attributes = upload.attributes
        return [.text(upload.id), .bytes(upload.key.bytes), .text(attributes.contentType), optional(attributes.cacheControl),
                optional(attributes.contentDisposition), optional(attributes.contentEncoding), optional(attributes.expires),
                optional(attributes.userMetadataText), .int(upload.created), .int(upload.expires), optional(upload.completedETag),
                optional(upload.checksum), optional(attributes.contentLanguage)]
    }

    /// The upload of a `multipart_uploads` row; nil, reported to `invalid`, if its key fails validation.
    private static func multipart(from row: PostgresRow, reportingTo invalid: InvalidKeyRows?) -> MultipartUpload? {
        guard let id = row.text("id"), let bytes = row.bytes("key"),
              let key = InvalidKeyRows.key(bytes, in: "multipart_uploads", reportingTo: invalid) else { return nil }
        return MultipartUpload(id: id, key: key, attributes: attributes(row, expiresColumn: "expires_header"),
                               created: row.int("created") ?? 0, expires: row.int("expires") ?? 0, completedETag: row.text("completed_etag"),
                               checksum: row.text("checksum"))
    }

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
    func claimUpload(_ id: String, node: String, until: Int64) throws(StoreError) -> Bool {
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
    func releaseUpload(_ id: String, node: String) {
        _ = try? execute("DELETE FROM claims WHERE id = $1 AND node = $2", [.text(id), .text(node)])
    }

    private static func values(_ upload: UploadRecord) -> [PostgresValue] {
        let attributes = upload.attributes
        return [.text(upload.id), upload.length.map { .int(Int64($0)) } ?? .null, .int(Int64(upload.offset)), .bytes(upload.hashState),
                .text(upload.metadata), upload.key.map { .bytes($0.bytes) } ?? .null, .text(attributes.contentType), .int(upload.expires),
                upload.completedKey.map { .bytes($0.bytes) } ?? .null, optional(attributes.cacheControl),
                optional(attributes.contentDisposition), optional(attributes.contentEncoding), optional(attributes.expires),
                optional(attributes.userMetadataText)]
    }

    /// The upload of an `uploads` row; a key or completed key that fails validation is nil, and
    /// reported to `invalid`.
    private static func upload(from row: PostgresRow, reportingTo invalid: InvalidKeyRows?) -> UploadRecord? {
        guard let id = row.text("id") else { return nil }
        return UploadRecord(
            id: id, length: row.int("length").map { UInt64(max(0, $0)) }, offset: UInt64(max(0, row.int("offset") ?? 0)),
            hashState: row.bytes("hash_state") ?? [], metadata: row.text("metadata") ?? "",
            key: row.bytes("key").flatMap { InvalidKeyRows.key($0, in: "uploads", reportingTo: invalid) },
            attributes: attributes(row, expiresColumn: "expires_header"), expires: row.int("expires") ?? 0,
            completedKey: row.bytes("completed_key").flatMap { InvalidKeyRows.key($0, in: "uploads", reportingTo: invalid) })
    }

    // MARK: Import (migrate-index)

    /// Adds what a single-node index holds, in one transaction, keeping whatever the database
    /// has already (a migration run again after an interruption, or after the cluster wrote):
    /// every insert is `ON CONFLICT DO NOTHING`. Returns how many blob records were new.
    func importBatch(records: [BlobRecord], uploads: [UploadRecord] = [], multipart: [(MultipartUpload, [UploadedPart])] = [])
        throws(StoreError) -> Int {
        try run { () throws(PostgresError) in
            try pool.transaction { connection throws(PostgresError) in
                var added = 0
                for record in records {
                    added += try connection.execute("""
                        INSERT INTO blobs (\(Self.columns)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
                        ON CONFLICT (key) DO NOTHING
                        """, Self.values(record)).affected
                }
                for upload in uploads {
                    try connection.execute("""
                        INSERT INTO uploads (id, length, "offset", hash_state, metadata, key, content_type, expires, completed_key,
                                             cache_control, content_disposition, content_encoding, expires_header, user_metadata)
                        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) ON CONFLICT (id) DO NOTHING
                        """, Self.values(upload))
                }
                for (upload, parts) in multipart {
                    try connection.execute("""
                        INSERT INTO multipart_uploads (id, key, content_type, cache_control, content_disposition, content_encoding,
                            expires_header, user_metadata, created, expires, completed_etag, checksum, content_language)
                        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) ON CONFLICT (id) DO NOTHING
                        """, Self.values(upload))
                    for part in parts {
                        try connection.execute("""
                            INSERT INTO multipart_parts (upload, number, size, md5, modified, checksum) VALUES ($1, $2, $3, $4, $5, $6)
                            ON CONFLICT (upload, number) DO NOTHING
                            """, Self.values(part, of: upload.id))
                    }
                }
                return added
            }
        }
    }

    // MARK: Rows

    /// The records of `keys`, their rows locked until the transaction ends, in key order.
    private static func fetchForUpdate(_ keys: [BlobKey], in connection: PostgresConnection) throws(PostgresError) -> [BlobKey: BlobRecord] {
        let rows = try connection.execute("SELECT \(columns) FROM blobs WHERE key = ANY($1) ORDER BY key FOR UPDATE",
                                          [.byteaArray(keys.map(\.bytes))]).rows
        var records: [BlobKey: BlobRecord] = [:]
        for record in rows.compactMap({ record(from: $0) }) { records[record.key] = record }
        return records
    }

    /// The records of `keys`, in one statement.
    private static func fetch(_ keys: [BlobKey], in connection: PostgresConnection) throws(PostgresError) -> [BlobKey: BlobRecord] {
        let rows = try connection.execute("SELECT \(columns) FROM blobs WHERE key = ANY($1)", [.byteaArray(keys.map(\.bytes))]).rows
        var records: [BlobKey: BlobRecord] = [:]
        for record in rows.compactMap({ record(from: $0) }) { records[record.key] = record }
        return records
    }

    /// The record of a `blobs` row; nil, reported to `invalid`, if its key fails validation.
    private static func record(from row: PostgresRow, reportingTo invalid: InvalidKeyRows? = nil) -> BlobRecord? {
        guard let bytes = row.bytes("key"), let key = InvalidKeyRows.key(bytes, in: "blobs", reportingTo: invalid),
              let version = row.text("version"),
              let sha256 = row.bytes("sha256") else { return nil }
        return BlobRecord(key: key, version: version, size: UInt64(max(0, row.int("size") ?? 0)), sha256: sha256,
                          attributes: attributes(row, expiresColumn: "expires"), modified: row.int("modified") ?? 0,
                          md5: row.bytes("md5"), parts: row.int("parts").map { Int($0) },
                          partSizes: BlobRecord.partSizes(fromText: row.text("part_sizes")),
                          partChecksums: BlobRecord.partChecksums(fromText: row.text("part_checksums")), checksum: row.text("checksum"))
    }

    private static func attributes(_ row: PostgresRow, expiresColumn: String) -> BlobAttributes {
        BlobAttributes(contentType: row.text("content_type") ?? "application/octet-stream", cacheControl: row.text("cache_control"),
                       contentDisposition: row.text("content_disposition"), contentEncoding: row.text("content_encoding"),
                       contentLanguage: row.text("content_language"), expires: row.text(expiresColumn), userMetadata: BlobAttributes.userMetadata(fromText: row.text("user_metadata")))
    }

    private static func optional(_ text: String?) -> PostgresValue {
        text.map { .text($0) } ?? .null
    }

    private func rows(_ sql: String, _ parameters: [PostgresValue]) throws(StoreError) -> [PostgresRow] {
        try run { () throws(PostgresError) in
            try pool.withConnection { connection throws(PostgresError) in try connection.execute(sql, parameters).rows }
        }
    }

    private func texts(_ sql: String, _ parameters: [PostgresValue], column: String) throws(StoreError) -> [String] {
        try rows(sql, parameters).compactMap { $0.text(column) }
    }

    private func exists(_ sql: String, _ parameters: [PostgresValue]) throws(StoreError) -> Bool {
        try rows(sql, parameters).first?.bool("found") ?? false
    }

    private func execute(_ sql: String, _ parameters: [PostgresValue]) throws(StoreError) {
        _ = try rows(sql, parameters)
    }

    private func transaction(_ body: (PostgresConnection) throws(PostgresError) -> Void) throws(StoreError) {
        try run { () throws(PostgresError) in try pool.transaction(body) }
    }

    private func run<T>(_ body: () throws(PostgresError) -> T) throws(StoreError) -> T {
        do {
            return try body()
        } catch {
            throw Self.storeError(error)
        }
    }

    /// A PostgreSQL error by its kind: down or restarting is `.unavailable` (503 with
    /// Retry-After), a lost race that retrying did not settle `.busy`, a full disk `.full`.
    static func storeError(_ error: PostgresError) -> StoreError {
        switch error {
        case .unavailable(let message): .index(.unavailable(message))
        case .retry: .index(.busy)
        case .diskFull: .index(.full)
        case .uniqueViolation(let message): .index(.failed(message))
        case .failed(let state, let message): .index(.failed("\(state): \(message)"))
        }
    }
}

/// The PostgreSQL schema, version by version, applied at start under an advisory lock so that
/// nodes starting together do not race.
enum PostgresSchema {
    /// Advisory lock keys of blobd (arbitrary, fixed).
    static let migrationLock: Int64 = 0x626C_6F62_6400_0001
    static let reclaimLock: Int64 = 0x626C_6F62_6400_0002

    static let steps: [(name: String, sql: String)] = [
        ("1-tables", """
            CREATE TABLE blobs (
                key bytea PRIMARY KEY, version text NOT NULL, size bigint NOT NULL, sha256 bytea NOT NULL,
                content_type text NOT NULL, modified bigint NOT NULL, cache_control text, content_disposition text,
                content_encoding text, expires text, user_metadata text, md5 bytea, parts integer, checksum text
            );
            CREATE INDEX blobs_by_version ON blobs (version COLLATE "C");
            CREATE TABLE uploads (
                id text PRIMARY KEY, length bigint, "offset" bigint NOT NULL, hash_state bytea NOT NULL, metadata text NOT NULL,
                key bytea, content_type text NOT NULL, expires bigint NOT NULL, completed_key bytea, cache_control text,
                content_disposition text, content_encoding text, expires_header text, user_metadata text
            );
            CREATE TABLE claims (id text PRIMARY KEY, node text NOT NULL, until bigint NOT NULL);
            CREATE INDEX uploads_by_expiry ON uploads (expires);
            CREATE TABLE garbage (version text PRIMARY KEY, since bigint NOT NULL);
            CREATE INDEX garbage_by_age ON garbage (since);
            CREATE TABLE buckets (name text PRIMARY KEY, created bigint NOT NULL);
            CREATE TABLE multipart_uploads (
                id text PRIMARY KEY, key bytea NOT NULL, content_type text NOT NULL, cache_control text, content_disposition text,
                content_encoding text, expires_header text, user_metadata text, created bigint NOT NULL, expires bigint NOT NULL,
                completed_etag text
            );
            CREATE INDEX multipart_by_key ON multipart_uploads (key);
            CREATE TABLE multipart_parts (
                upload text NOT NULL, number integer NOT NULL, size bigint NOT NULL, md5 bytea NOT NULL, modified bigint NOT NULL,
                PRIMARY KEY (upload, number)
            );
            """),
        ("2-part-sizes", "ALTER TABLE blobs ADD COLUMN part_sizes text"),
        ("3-multipart-checksums", """
            ALTER TABLE multipart_uploads ADD COLUMN checksum text;
            ALTER TABLE multipart_parts ADD COLUMN checksum text;
            """),
        ("4-s3-details", """
            ALTER TABLE blobs ADD COLUMN content_language text;
            ALTER TABLE blobs ADD COLUMN part_checksums text;
            ALTER TABLE multipart_uploads ADD COLUMN content_language text;
            ALTER TABLE buckets ADD COLUMN region text;
            """),
        // Who started each upload (a credential or client address), for --max-open-uploads.
        ("5-upload-owners", """
            ALTER TABLE uploads ADD COLUMN owner text;
            ALTER TABLE multipart_uploads ADD COLUMN owner text;
            CREATE INDEX uploads_by_owner ON uploads (owner) WHERE owner IS NOT NULL;
            CREATE INDEX multipart_by_owner ON multipart_uploads (owner) WHERE owner IS NOT NULL;
            """),
    ]

    static func migrate(_ pool: PostgresPool) throws(PostgresError) {
        try pool.transaction { connection throws(PostgresError) in
            try connection.simple("SELECT pg_advisory_xact_lock(\(migrationLock))")
            try connection.simple("CREATE TABLE IF NOT EXISTS blobd_migrations (name text PRIMARY KEY, applied bigint NOT NULL)")
            let applied = Set(try connection.execute("SELECT name FROM blobd_migrations").rows.compactMap { $0.text("name") })
            for step in steps where !applied.contains(step.name) {
                try connection.simple(step.sql)
                try connection.execute("INSERT INTO blobd_migrations (name, applied) VALUES ($1, $2)",
                                       [.text(step.name), .int(Int64(time(nil)))])
            }
        }
    }
}

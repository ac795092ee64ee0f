import BlobCatalog
import BlobCore
import Foundation
import Logging
import PostgresClient

/// The index in PostgreSQL, shared by every node of a cluster (see README "Several nodes").
///
/// Every read goes to the database: there is no per-node cache, so a node sees another's
/// commit at once. A commit is decided inside its transaction: the current row is read
/// `FOR UPDATE` (or, for a new key, inserted with `ON CONFLICT DO NOTHING`, which waits for a
/// concurrent insert of the same key and then reports it), the condition is evaluated against
/// it, and only then is the row written. A batch of commits (`GroupCommit` gathers a node's
/// concurrent commits) shares a transaction; with `synchronous_commit` on, COMMIT returns once
/// the WAL is flushed.
public final class PostgresBlobIndex: BlobIndex, UploadIndex, BucketIndex, MultipartIndex, SharedBookkeeping, CatalogBackend {
    let pool: PostgresPool
    /// Where the catalog's decisions read the time of day.
    public let clock: WallClock
    /// Concurrent point reads share round trips (see `ReadBatch`: a read still sees every
    /// commit acknowledged before it began).
    private let reads: ReadBatch
    /// Where rows whose key fails validation are reported.
    let invalidKeys: InvalidKeyRows

    /// Connects to `url` (creating or upgrading the schema) with up to `connections` connections;
    /// `clock` is where its decisions read the time of day.
    public init(url: String, connections: Int, invalidKeys: InvalidKeyRows = InvalidKeyRows(logger: Logger(label: "blobd.index")),
                clock: WallClock = .system) throws(StoreError) {
        let pool = PostgresPool(url: url, size: connections)
        self.pool = pool
        self.clock = clock
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

    public func record(for key: BlobKey) throws(StoreError) -> BlobRecord? {
        try reads.record(for: key)
    }

    public func record(for key: BlobKey, then completion: @escaping @Sendable (Result<BlobRecord?, StoreError>) -> Void) {
        reads.record(for: key, then: completion)
    }

    /// One transaction for the batch: the rows of its keys are read and locked in one statement
    /// (in key order), each commit is decided in turn against what is there (including the
    /// batch's own earlier commits), and the replaced versions go to `garbage` in one statement at
    /// the end. New keys are inserted in the batch's order: two nodes inserting the same new keys
    /// in opposite orders deadlock, which PostgreSQL detects (40P01), and the transaction runs
    /// again (`PostgresPool.transaction`), deciding every condition again.
    public func commit(_ batch: [CommitRequest]) throws(StoreError) -> [Result<IndexCommit, StoreError>] {
        try writing { transaction throws(PostgresError) in
            try transaction.lockCurrent(Set(batch.map(\.record.key)).sorted())
            return try batch.map { request throws(PostgresError) in try transaction.apply(request, now: clock.seconds) }
        }
    }

    public func list(prefix: [UInt8], after: [UInt8]?, limit: Int) throws(StoreError) -> [BlobRecord] {
        try InvalidKeyRows.fill(limit: limit, after: after, rows: { (after, count) throws(StoreError) in
            try rows(prefix: prefix, after: after, limit: count)
        }, key: { $0.bytes("key") }, record: { PostgresBlobRow.record(from: $0, reportingTo: invalidKeys) })
    }

    /// Up to `limit` rows of `blobs` in key order, keys starting with `prefix` and after `after`.
    private func rows(prefix: [UInt8], after: [UInt8]?, limit: Int) throws(StoreError) -> [PostgresRow] {
        // bytea compares bytewise, which is the listing order.
        // From `after` (exclusive) when it sorts at or past the prefix, else from the prefix.
        let strict = after.map { !$0.lexicographicallyPrecedes(prefix) } ?? false
        let lower = strict ? after ?? prefix : prefix
        let upper = prefixUpperBound(of: prefix)
        let sql = "SELECT \(PostgresBlobRow.selection) FROM blobs WHERE key \(strict ? ">" : ">=") $1"
            + (upper == nil ? " AND $2::bytea IS NULL" : " AND key < $2") + " ORDER BY key LIMIT $3"
        return try run { () throws(PostgresError) in
            try pool.withConnection { connection throws(PostgresError) in
                try connection.execute(sql, [.bytes(lower), upper.map { .bytes($0) } ?? .null, .int(Int64(limit))]).rows
            }
        }
    }

    // MARK: Rows

    /// The records of `keys`, their rows locked until the transaction ends, in key order.
    static func fetchForUpdate(_ keys: [BlobKey], in connection: PostgresConnection,
                               locking: Bool = true) throws(PostgresError) -> [BlobKey: BlobRecord] {
        let rows = try connection.execute("SELECT \(PostgresBlobRow.selection) FROM blobs WHERE key = ANY($1) ORDER BY key"
                                          + (locking ? " FOR UPDATE" : ""), [.byteaArray(keys.map(\.bytes))]).rows
        var records: [BlobKey: BlobRecord] = [:]
        for record in rows.compactMap({ PostgresBlobRow.record(from: $0) }) { records[record.key] = record }
        return records
    }

    /// The records of `keys`, in one statement.
    private static func fetch(_ keys: [BlobKey], in connection: PostgresConnection) throws(PostgresError) -> [BlobKey: BlobRecord] {
        let rows = try connection.execute("SELECT \(PostgresBlobRow.selection) FROM blobs WHERE key = ANY($1)", [.byteaArray(keys.map(\.bytes))]).rows
        var records: [BlobKey: BlobRecord] = [:]
        for record in rows.compactMap({ PostgresBlobRow.record(from: $0) }) { records[record.key] = record }
        return records
    }

    /// The attribute columns that blobs, uploads and multipart uploads share (the Expires header
    /// is in `expiresColumn`).
    static func attributes(_ row: PostgresRow, expiresColumn: String) -> BlobAttributes {
        BlobAttributes(contentType: row.text("content_type") ?? "application/octet-stream", cacheControl: row.text("cache_control"),
                       contentDisposition: row.text("content_disposition"), contentEncoding: row.text("content_encoding"),
                       contentLanguage: row.text("content_language"), expires: row.text(expiresColumn), userMetadata: BlobAttributes.userMetadata(fromText: row.text("user_metadata")))
    }

    /// `text`, or NULL.
    static func optional(_ text: String?) -> PostgresValue {
        text.map { .text($0) } ?? .null
    }

    func rows(_ sql: String, _ parameters: [PostgresValue]) throws(StoreError) -> [PostgresRow] {
        try run { () throws(PostgresError) in
            try pool.withConnection { connection throws(PostgresError) in try connection.execute(sql, parameters).rows }
        }
    }

    func texts(_ sql: String, _ parameters: [PostgresValue], column: String) throws(StoreError) -> [String] {
        try rows(sql, parameters).compactMap { $0.text(column) }
    }

    func exists(_ sql: String, _ parameters: [PostgresValue]) throws(StoreError) -> Bool {
        try rows(sql, parameters).first?.bool("found") ?? false
    }

    func execute(_ sql: String, _ parameters: [PostgresValue]) throws(StoreError) {
        _ = try rows(sql, parameters)
    }

    /// A transaction as the catalog's decisions see it; the garbage they gathered is recorded
    /// before it commits.
    public func writing<T>(_ body: (PostgresCatalogTransaction) throws(PostgresError) -> T) throws(StoreError) -> T {
        try run { () throws(PostgresError) in
            try pool.transaction { connection throws(PostgresError) in
                let transaction = PostgresCatalogTransaction(connection, index: self, locking: true)
                let result = try body(transaction)
                try transaction.recordGarbage()
                return result
            }
        }
    }

    /// Reads on one connection, without locks, as the catalog's decisions see them.
    public func reading<T>(_ body: (PostgresCatalogTransaction) throws(PostgresError) -> T) throws(StoreError) -> T {
        try run { () throws(PostgresError) in
            try pool.withConnection { connection throws(PostgresError) in
                try body(PostgresCatalogTransaction(connection, index: self, locking: false))
            }
        }
    }

    func transaction(_ body: (PostgresConnection) throws(PostgresError) -> Void) throws(StoreError) {
        try run { () throws(PostgresError) in try pool.transaction(body) }
    }

    /// A transaction whose COMMIT does not wait for the WAL flush (`synchronous_commit = off` for
    /// it alone), for bookkeeping whose loss to a server crash costs only repeated work: the
    /// event delivery's claims, deletions and retries (a lost claim or deletion sends an event
    /// again, with its id; deliveries are at least once). PostgreSQL's WAL is in order, so the
    /// next durable commit makes it durable too.
    func unsyncedTransaction<T>(_ body: (PostgresConnection) throws(PostgresError) -> T) throws(StoreError) -> T {
        try run { () throws(PostgresError) in
            try pool.transaction { connection throws(PostgresError) in
                try connection.simple("SET LOCAL synchronous_commit = off")
                return try body(connection)
            }
        }
    }

    func run<T>(_ body: () throws(PostgresError) -> T) throws(StoreError) -> T {
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

extension CatalogOpener {
    /// The catalog a cluster shares: PostgreSQL at `url` (a `postgres://` URL or libpq
    /// key=value string), with up to `connections` connections from this node.
    public static func postgres(url: String, connections: Int) -> CatalogOpener {
        CatalogOpener(isShared: true) { context throws(StoreError) in
            let index = try PostgresBlobIndex(url: url, connections: connections, invalidKeys: context.invalidKeys, clock: context.clock)
            var catalog = Catalog(blobs: index, uploads: index, buckets: index, multipart: index, access: index, events: index,
                                  node: .shared(index))
            catalog.versions = index
            return catalog
        }
    }
}

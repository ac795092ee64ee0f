import BlobCatalog
import BlobContent
import BlobCore
import Dispatch
import Foundation
import GRDB
import Logging
import Synchronization

/// The index in one SQLite file (WAL mode, `synchronous = FULL`: every commit fsyncs the WAL,
/// so it is durable when it returns), through GRDB.
public final class SQLiteBlobIndex: BlobIndex, UploadIndex, BucketIndex, MultipartIndex, SoloBookkeeping, CatalogBackend {
    let pool: DatabasePool
    /// Where the catalog's decisions read the time of day.
    public let clock: WallClock
    /// Buckets known to exist, by name, with a generation that every removal bumps: every S3
    /// PUT and failed GET checks its bucket, and this is the only process writing the file.
    let knownBuckets = Mutex((names: [String: Bucket](), generation: 0))
    /// Garbage versions whose files are gone; their rows go in the next write transaction.
    let collected = Mutex<[String]>([])
    /// True while the writer connection may be at `synchronous = NORMAL` (`writeUnsynced`).
    private let writerUnsynced = Mutex(false)

    /// Batches committed since the last checkpoint (copying the WAL into the database file).
    /// A checkpoint runs every `batchesPerCheckpoint` batches, after their answers are out,
    /// rather than inside the commit that crosses SQLite's automatic-checkpoint mark.
    private let batchesSinceCheckpoint = Mutex(0)
    static let batchesPerCheckpoint = 32
    /// The automatic checkpoint stays, at this many WAL pages, for batches large enough to
    /// need one sooner.
    static let backstopCheckpointPages = 4096

    /// Where rows whose key fails validation are reported.
    let invalidKeys: InvalidKeyRows
    /// The never-tried events this process wrote, for the delivery loop's claims.
    let freshEvents: FreshEvents

    /// Opens (creating if needed) the index at `path`; `freshEventCapacity` bounds `freshEvents`,
    /// and `clock` is where its decisions read the time of day.
    public init(path: String, invalidKeys: InvalidKeyRows = InvalidKeyRows(logger: Logger(label: "blobd.index")),
                freshEventCapacity: Int = 16_384, clock: WallClock = .system) throws(StoreError) {
        self.invalidKeys = invalidKeys
        self.clock = clock
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            // Hot records live in CachedBlobIndex; SQLite needs only a small page cache.
            try db.execute(sql: "PRAGMA cache_size = -1024")
        }
        configuration.maximumReaderCount = 2
        configuration.busyMode = .timeout(30)
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            // An acknowledged write must survive power loss: fsync the WAL on every commit. Set
            // here, after opening: GRDB sets NORMAL on the writer when it enables WAL mode, which
            // would override the same pragma in `prepareDatabase`.
            try pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = FULL")
                try db.execute(sql: "PRAGMA wal_autocheckpoint = \(Self.backstopCheckpointPages)")
            }
            try Self.migrator.migrate(pool)
            let ids = try pool.read { db in try Row.fetchOne(db, sql: Self.eventIDsQuery) }
            freshEvents = FreshEvents(floor: ids?[0] ?? 0, nextID: (ids?[1] ?? 0) + 1, capacity: freshEventCapacity)
        } catch {
            throw Self.storeError(error)
        }
    }

    /// `PRAGMA synchronous` of the connection that writes (2 is FULL).
    func writerSynchronousLevel() throws(StoreError) -> Int {
        try run { try pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 } }
    }

    public func record(for key: BlobKey) throws(StoreError) -> BlobRecord? {
        try run { try pool.read { db in try Self.fetch(key, in: db) } }
    }

    /// One write transaction (one WAL fsync) for the batch; it also forgets the garbage versions
    /// whose files are gone. Each request is decided against the rows as the batch's earlier
    /// requests left them.
    public func commit(_ batch: [CommitRequest]) throws(StoreError) -> [Result<IndexCommit, StoreError>] {
        try writing { transaction in
            try Self.pruneGarbage(collected.withLock { $0.removeAllReturning() }, in: transaction.db)
            return try batch.map { request in try transaction.apply(request, now: clock.seconds) }
        }
    }

    /// Checkpoints every `batchesPerCheckpoint` batches, after their answers are out.
    public func batchAnswered() {
        checkpointIfDue()
    }

    /// On the writer connection, so no commit can append meanwhile and the next one starts the
    /// WAL over; PASSIVE, so it never waits for readers. A failure only leaves more in the WAL
    /// for the next checkpoint (or the automatic one).
    private func checkpointIfDue() {
        let due = batchesSinceCheckpoint.withLock { batches in
            batches += 1
            guard batches >= Self.batchesPerCheckpoint else { return false }
            batches = 0
            return true
        }
        if due { _ = try? pool.writeWithoutTransaction { db in try db.checkpoint(.passive) } }
    }

    public func list(prefix: [UInt8], after: [UInt8]?, limit: Int) throws(StoreError) -> [BlobRecord] {
        try InvalidKeyRows.fill(limit: limit, after: after, rows: { (after, count) throws(StoreError) in
            try rows(prefix: prefix, after: after, limit: count)
        }, key: { Array($0["key"] as Data) }, record: { SQLiteBlobRow.record(from: $0, reportingTo: invalidKeys) })
    }

    /// Up to `limit` rows of `blobs` in key order, keys starting with `prefix` and after `after`.
    private func rows(prefix: [UInt8], after: [UInt8]?, limit: Int) throws(StoreError) -> [Row] {
        // Keys are BLOBs, so SQLite compares them bytewise (memcmp), which is the listing order.
        var sql = "SELECT * FROM blobs WHERE key >= ?"
        var arguments: StatementArguments = [Data(prefix)]
        if let after {
            sql += " AND key > ?"
            arguments += [Data(after)]
        }
        if let upper = prefixUpperBound(of: prefix) {
            sql += " AND key < ?"
            arguments += [Data(upper)]
        }
        sql += " ORDER BY key LIMIT ?"
        arguments += [limit]
        return try run {
            try pool.read { db in try Row.fetchAll(db.cachedStatement(sql: sql), arguments: arguments) }
        }
    }

    static func fetch(_ key: BlobKey, in db: Database) throws -> BlobRecord? {
        let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM blobs WHERE key = ?"),
                                   arguments: [Data(key.bytes)])
        return row.flatMap { SQLiteBlobRow.record(from: $0) }
    }

    /// A write transaction, durable when this returns. The events it wrote join `freshEvents`
    /// once it commits, before the writer is free for the next.
    func write<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        try run {
            try pool.writeWithoutTransaction { db in
                // After a `writeUnsynced` that could not go back to FULL: nothing commits before it is.
                if writerUnsynced.withLock({ $0 }) { try restoreFullSync(db) }
                do {
                    let result = try Self.transaction(db, body)
                    freshEvents.publishStaged()
                    return result
                } catch {
                    freshEvents.discardStaged()
                    throw error
                }
            }
        }
    }

    /// `write`, as the catalog's decisions see it.
    public func writing<T>(_ body: (SQLiteCatalogTransaction) throws -> T) throws(StoreError) -> T {
        try write { db in try body(SQLiteCatalogTransaction(db: db, index: self)) }
    }

    /// A read on the pool's snapshot, as the catalog's decisions see it.
    public func reading<T>(_ body: (SQLiteCatalogTransaction) throws -> T) throws(StoreError) -> T {
        try run { try pool.read { db in try body(SQLiteCatalogTransaction(db: db, index: self)) } }
    }

    /// A write transaction whose commit does not wait for the disk (`synchronous = NORMAL`), for
    /// bookkeeping whose loss to a power cut costs only repeated work: the event delivery's claims,
    /// deletions and retries (a lost deletion sends an event again, with its id; deliveries are
    /// at least once). It keeps the commits' order: the WAL is appended in order, and the next
    /// durable commit's fsync (or a checkpoint's) makes it durable too.
    func writeUnsynced<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        try run {
            try pool.writeWithoutTransaction { db in
                writerUnsynced.withLock { $0 = true }
                try db.cachedStatement(sql: "PRAGMA synchronous = NORMAL").execute()
                let result = Result(catching: { try Self.transaction(db, body) })
                try restoreFullSync(db)
                return try result.get()
            }
        }
    }

    /// Back to `synchronous = FULL` on the writer connection.
    private func restoreFullSync(_ db: Database) throws {
        try db.cachedStatement(sql: "PRAGMA synchronous = FULL").execute()
        writerUnsynced.withLock { $0 = false }
    }

    private static func transaction<T>(_ db: Database, _ body: (Database) throws -> T) throws -> T {
        var result: T?
        try db.inTransaction {
            result = try body(db)
            return .commit
        }
        guard let result else { throw StoreError.index(.failed("a write transaction returned nothing")) }
        return result
    }

    func run<T>(_ body: () throws -> T) throws(StoreError) -> T {
        do {
            return try body()
        } catch {
            throw Self.storeError(error)
        }
    }

    /// A store error as it is, and an SQLite error by its kind.
    static func storeError(_ error: any Error) -> StoreError {
        if let error = error as? StoreError { return error }
        guard let error = error as? DatabaseError else { return .index(.failed("\(error)")) }
        let detail = error.message ?? "\(error.resultCode)"
        switch error.resultCode {
        case .SQLITE_FULL: return .index(.full)
        case .SQLITE_BUSY, .SQLITE_LOCKED: return .index(.busy)
        case .SQLITE_CORRUPT, .SQLITE_NOTADB: return .index(.corrupt(detail))
        case .SQLITE_CANTOPEN, .SQLITE_IOERR, .SQLITE_READONLY, .SQLITE_PERM: return .index(.unavailable(detail))
        default: return .index(.failed(detail))
        }
    }
}

extension CatalogOpener {
    /// The catalog of one node: `index.sqlite` in the data directory, with recently read
    /// records cached in memory.
    public static let sqlite = CatalogOpener(isShared: false) { context throws(StoreError) in
        let path = context.directory + "/index.sqlite"
        // Made here, 0600, so that SQLite's -wal and -shm files, which take the database's
        // mode, are blobd's only too.
        try FileSystem.open(path, O_RDONLY | O_CREAT).close()
        let index = try SQLiteBlobIndex(path: path, invalidKeys: context.invalidKeys, clock: context.clock)
        // The record cache is coherent only while this process is the index's one writer.
        var catalog = Catalog(blobs: CachedBlobIndex(index), uploads: index, buckets: index, multipart: index, access: index,
                              events: index, node: .solo(index))
        catalog.versions = index
        return catalog
    }
}

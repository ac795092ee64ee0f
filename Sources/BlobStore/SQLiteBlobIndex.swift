import Dispatch
import Foundation
import GRDB
import Logging
import Synchronization

/// The index in one SQLite file (WAL mode, `synchronous = FULL`: every commit fsyncs the WAL,
/// so it is durable when it returns), through GRDB.
public final class SQLiteBlobIndex: BlobIndex, UploadIndex, BucketIndex, MultipartIndex {
    private let pool: DatabasePool
    /// Buckets known to exist, by name, with a generation that every removal bumps: every S3
    /// PUT and failed GET checks its bucket, and this is the only process writing the file.
    private let knownBuckets = Mutex((names: [String: Bucket](), generation: 0))
    /// Garbage versions whose files are gone; their rows go in the next write transaction.
    private let collected = Mutex<[String]>([])
    /// Commits waiting for the group-commit leader.
    private let commits = GroupCommit()

    /// Batches committed since the last checkpoint (copying the WAL into the database file).
    /// A checkpoint runs every `batchesPerCheckpoint` batches, after their answers are out,
    /// rather than inside the commit that crosses SQLite's automatic-checkpoint mark.
    private let batchesSinceCheckpoint = Mutex(0)
    static let batchesPerCheckpoint = 32
    /// The automatic checkpoint stays, at this many WAL pages, for batches large enough to
    /// need one sooner.
    static let backstopCheckpointPages = 4096

    /// Runs before each group commit's transaction with the batch's records: where the caller
    /// makes durable what every commit of the batch needs once (the folders of their files).
    private let beforeCommit: @Sendable ([BlobRecord]) throws(StoreError) -> Void
    /// Where rows whose key fails validation are reported.
    private let invalidKeys: InvalidKeyRows

    /// Opens (creating if needed) the index at `path`.
    public init(path: String, invalidKeys: InvalidKeyRows = InvalidKeyRows(logger: Logger(label: "blobd.index")),
                beforeCommit: @escaping @Sendable ([BlobRecord]) throws(StoreError) -> Void = { _ in }) throws(StoreError) {
        self.beforeCommit = beforeCommit
        self.invalidKeys = invalidKeys
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
        } catch {
            throw Self.storeError(error)
        }
    }

    /// The schema, version by version. A database made before migrations were recorded has the
    /// tables of "1-tables" already, which that step then leaves as they are.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("1-tables") { db in
            try db.execute(sql: """
                CREATE TABLE IF NOT EXISTS blobs (
                    key BLOB PRIMARY KEY,
                    version TEXT NOT NULL,
                    size INTEGER NOT NULL,
                    sha256 BLOB NOT NULL,
                    content_type TEXT NOT NULL,
                    modified INTEGER NOT NULL
                ) WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS uploads (
                    id TEXT PRIMARY KEY,
                    length INTEGER,
                    offset INTEGER NOT NULL,
                    hash_state BLOB NOT NULL,
                    metadata TEXT NOT NULL,
                    key BLOB,
                    content_type TEXT NOT NULL,
                    expires INTEGER NOT NULL,
                    completed_key BLOB
                ) WITHOUT ROWID;
                CREATE INDEX IF NOT EXISTS uploads_by_expiry ON uploads (expires);
                CREATE INDEX IF NOT EXISTS blobs_by_version ON blobs (version);
                CREATE TABLE IF NOT EXISTS garbage (version TEXT PRIMARY KEY) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("2-blob-headers") { db in
            try db.execute(sql: """
                ALTER TABLE blobs ADD COLUMN cache_control TEXT;
                ALTER TABLE blobs ADD COLUMN content_disposition TEXT;
                ALTER TABLE uploads ADD COLUMN cache_control TEXT;
                ALTER TABLE uploads ADD COLUMN content_disposition TEXT;
                """)
        }
        migrator.registerMigration("3-buckets") { db in
            try db.execute(sql: "CREATE TABLE buckets (name TEXT PRIMARY KEY, created INTEGER NOT NULL) WITHOUT ROWID")
        }
        migrator.registerMigration("4-more-attributes") { db in
            try db.execute(sql: """
                ALTER TABLE blobs ADD COLUMN content_encoding TEXT;
                ALTER TABLE blobs ADD COLUMN expires TEXT;
                ALTER TABLE blobs ADD COLUMN user_metadata TEXT;
                ALTER TABLE uploads ADD COLUMN content_encoding TEXT;
                ALTER TABLE uploads ADD COLUMN expires_header TEXT;
                ALTER TABLE uploads ADD COLUMN user_metadata TEXT;
                """)
        }
        migrator.registerMigration("5-md5") { db in
            try db.execute(sql: "ALTER TABLE blobs ADD COLUMN md5 BLOB")
        }
        migrator.registerMigration("6-multipart") { db in
            try db.execute(sql: """
                ALTER TABLE blobs ADD COLUMN parts INTEGER;
                CREATE TABLE multipart_uploads (
                    id TEXT PRIMARY KEY, key BLOB NOT NULL, content_type TEXT NOT NULL, cache_control TEXT,
                    content_disposition TEXT, content_encoding TEXT, expires_header TEXT, user_metadata TEXT,
                    created INTEGER NOT NULL, expires INTEGER NOT NULL, completed_etag TEXT
                ) WITHOUT ROWID;
                CREATE INDEX multipart_by_key ON multipart_uploads (key);
                CREATE TABLE multipart_parts (
                    upload TEXT NOT NULL, number INTEGER NOT NULL, size INTEGER NOT NULL, md5 BLOB NOT NULL,
                    modified INTEGER NOT NULL, PRIMARY KEY (upload, number)
                ) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("7-checksum") { db in
            try db.execute(sql: "ALTER TABLE blobs ADD COLUMN checksum TEXT")
        }
        migrator.registerMigration("8-part-sizes") { db in
            try db.execute(sql: "ALTER TABLE blobs ADD COLUMN part_sizes TEXT")
        }
        migrator.registerMigration("9-multipart-checksums") { db in
            try db.execute(sql: """
                ALTER TABLE multipart_uploads ADD COLUMN checksum TEXT;
                ALTER TABLE multipart_parts ADD COLUMN checksum TEXT;
                """)
        }
        migrator.registerMigration("10-s3-details") { db in
            try db.execute(sql: """
                ALTER TABLE blobs ADD COLUMN content_language TEXT;
                ALTER TABLE blobs ADD COLUMN part_checksums TEXT;
                ALTER TABLE multipart_uploads ADD COLUMN content_language TEXT;
                ALTER TABLE buckets ADD COLUMN region TEXT;
                """)
        }
        // Who started each upload (a credential or client address), for --max-open-uploads.
        migrator.registerMigration("11-upload-owners") { db in
            try db.execute(sql: """
                ALTER TABLE uploads ADD COLUMN owner TEXT;
                ALTER TABLE multipart_uploads ADD COLUMN owner TEXT;
                CREATE INDEX uploads_by_owner ON uploads (owner) WHERE owner IS NOT NULL;
                CREATE INDEX multipart_by_owner ON multipart_uploads (owner) WHERE owner IS NOT NULL;
                """)
        }
        return migrator
    }

    /// `PRAGMA synchronous` of the connection that writes (2 is FULL).
    func writerSynchronousLevel() throws(StoreError) -> Int {
        try run { try pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 } }
    }

    public func record(for key: BlobKey) throws(StoreError) -> BlobRecord? {
        try run { try pool.read { db in try Self.fetch(key, in: db) } }
    }

    /// Group commit (`GroupCommit`): concurrent commits share one transaction, one WAL fsync.
    public func commit(_ record: BlobRecord, completingUpload: String?, if condition: @escaping (BlobRecord?) -> Bool,
                       then completion: @escaping (Result<IndexCommit, StoreError>) -> Void) {
        let request = CommitRequest(record: record, completingUpload: completingUpload, condition: condition, completion: completion)
        commits.submit(request, commitBatch: { [self] in commitBatch($0) }, afterBatch: { [self] in checkpointIfDue() })
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

    private func commitBatch(_ batch: [CommitRequest]) {
        do {
            try beforeCommit(batch.map(\.record))
            try pool.write { db in
                try Self.pruneGarbage(collected.withLock { $0.removeAllReturning() }, in: db)
                for request in batch {
                    request.result = try Self.apply(request, in: db)
                }
            }
        } catch {
            let failure = Self.storeError(error)
            for request in batch { request.result = .failure(failure) }
        }
    }

    private static func apply(_ request: CommitRequest, in db: Database) throws -> Result<IndexCommit, StoreError> {
        let record = request.record
        let current = try fetch(record.key, in: db)
        guard request.conditionHolds(for: current) else { return .failure(.preconditionFailed) }
        if let current { try addGarbage(current.version, in: db) }
        try db.cachedStatement(sql: """
            INSERT INTO blobs (key, version, size, sha256, content_type, modified, cache_control, content_disposition,
                               content_encoding, expires, user_metadata, md5, parts, checksum, part_sizes, content_language,
                               part_checksums)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(key) DO UPDATE SET version = excluded.version, size = excluded.size,
                sha256 = excluded.sha256, content_type = excluded.content_type, modified = excluded.modified,
                cache_control = excluded.cache_control, content_disposition = excluded.content_disposition,
                content_encoding = excluded.content_encoding, expires = excluded.expires, user_metadata = excluded.user_metadata,
                md5 = excluded.md5, parts = excluded.parts, checksum = excluded.checksum, part_sizes = excluded.part_sizes,
                content_language = excluded.content_language, part_checksums = excluded.part_checksums
            """).execute(arguments: [
                Data(record.key.bytes), record.version, Int64(record.size),
                Data(record.sha256), record.contentType, record.modified,
                record.cacheControl, record.contentDisposition,
                record.attributes.contentEncoding, record.attributes.expires, record.attributes.userMetadataText,
                record.md5.map { Data($0) }, record.parts, record.checksum, record.partSizesText,
                record.attributes.contentLanguage, record.partChecksumsText,
            ])
        if let upload = request.completingUpload {
            try db.cachedStatement(sql: "UPDATE uploads SET completed_key = ?, offset = ? WHERE id = ?")
                .execute(arguments: [Data(record.key.bytes), Int64(record.size), upload])
        }
        return .success(current.map { .replaced(previous: $0) } ?? .created)
    }

    public func remove(_ key: BlobKey, if condition: (BlobRecord) -> Bool) throws(StoreError) -> BlobRecord {
        let result: Result<BlobRecord, StoreError> = try write { db in
            guard let current = try Self.fetch(key, in: db) else { return .failure(.notFound) }
            guard condition(current) else { return .failure(.preconditionFailed) }
            try db.cachedStatement(sql: "DELETE FROM blobs WHERE key = ?").execute(arguments: [Data(key.bytes)])
            try Self.addGarbage(current.version, in: db)
            return .success(current)
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
            guard page.count == wanted, let last = page.last else { break }
            cursor = Array(last["key"] as Data)
        }
        return records
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
        if let upper = Self.upperBound(of: prefix) {
            sql += " AND key < ?"
            arguments += [Data(upper)]
        }
        sql += " ORDER BY key LIMIT ?"
        arguments += [limit]
        return try run {
            try pool.read { db in try Row.fetchAll(db.cachedStatement(sql: sql), arguments: arguments) }
        }
    }

    public func garbage() throws(StoreError) -> [String] {
        try run { try pool.read { db in try String.fetchAll(db, sql: "SELECT version FROM garbage") } }
    }

    public func collectedGarbage(_ version: String) {
        collected.withLock { $0.append(version) }
    }

    public func clearGarbage() throws(StoreError) {
        collected.withLock { $0.removeAll() }
        try run { try pool.write { db in try db.execute(sql: "DELETE FROM garbage") } }
    }

    private static func addGarbage(_ version: String, in db: Database) throws {
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO garbage (version) VALUES (?)").execute(arguments: [version])
    }

    private static func pruneGarbage(_ versions: [String], in db: Database) throws {
        for version in versions {
            try db.cachedStatement(sql: "DELETE FROM garbage WHERE version = ?").execute(arguments: [version])
        }
    }

    public func containsVersion(_ version: String) throws(StoreError) -> Bool {
        try run {
            try pool.read { db in
                try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM blobs WHERE version = ?)", arguments: [version]) ?? false
            }
        }
    }

    public func unfinishedUploads() throws(StoreError) -> [String] {
        try run { try pool.read { db in try String.fetchAll(db, sql: "SELECT id FROM uploads WHERE completed_key IS NULL") } }
    }

    public func allVersions() throws(StoreError) -> Set<String> {
        try run { try pool.read { db in Set(try String.fetchAll(db, sql: "SELECT version FROM blobs")) } }
    }

    public func versions(inFolder folder: String) throws(StoreError) -> Set<String> {
        // A range on blobs_by_version: the folder's versions, not a scan of the table.
        let upper = String(decoding: Self.upperBound(of: Array(folder.utf8)) ?? [0xFF], as: UTF8.self)
        return try run {
            try pool.read { db in
                Set(try String.fetchAll(db, sql: "SELECT version FROM blobs WHERE version >= ? AND version < ?",
                                        arguments: [folder, upper]))
            }
        }
    }

    public func totals() throws(StoreError) -> (count: Int, bytes: UInt64) {
        try run {
            try pool.read { db in
                let row = try Row.fetchOne(db, sql: "SELECT count(*), coalesce(sum(size), 0) FROM blobs")
                return (row?[0] ?? 0, UInt64(row?[1] as Int64? ?? 0))
            }
        }
    }

    // MARK: Buckets (S3)

    public func createBucket(_ bucket: Bucket) throws(StoreError) -> Bool {
        try write { db in
            try db.execute(sql: "INSERT OR IGNORE INTO buckets (name, created, region) VALUES (?, ?, ?)",
                           arguments: [bucket.name, bucket.created, bucket.region])
            return db.changesCount > 0
        }
    }

    public func bucket(_ name: String) throws(StoreError) -> Bucket? {
        let (known, generation) = knownBuckets.withLock { ($0.names[name], $0.generation) }
        if let known { return known }
        let found = try run {
            try pool.read { db in
                try Row.fetchOne(db, sql: "SELECT name, created, region FROM buckets WHERE name = ?", arguments: [name]).map(Self.bucket(from:))
            }
        }
        if let found {
            // Not if a removal ended meanwhile: what was read may be gone.
            knownBuckets.withLock { if $0.generation == generation { $0.names[name] = found } }
        }
        return found
    }

    public func buckets() throws(StoreError) -> [Bucket] {
        try run {
            try pool.read { db in
                try Row.fetchAll(db, sql: "SELECT name, created, region FROM buckets ORDER BY name").map(Self.bucket(from:))
            }
        }
    }

    private static func bucket(from row: Row) -> Bucket {
        Bucket(name: row["name"], created: row["created"], region: row["region"])
    }

    public func removeBucket(_ name: String) throws(StoreError) {
        let prefix = Array((name + "/").utf8)
        let upper = Self.upperBound(of: prefix) ?? [0xFF]
        let result: Result<Void, StoreError> = try write { db in
            guard try Int64.fetchOne(db, sql: "SELECT created FROM buckets WHERE name = ?", arguments: [name]) != nil else {
                return .failure(.bucketNotFound)
            }
            let used = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM blobs WHERE key >= ? AND key < ?)",
                                         arguments: [Data(prefix), Data(upper)]) ?? false
            guard !used else { return .failure(.bucketNotEmpty) }
            try db.execute(sql: "DELETE FROM buckets WHERE name = ?", arguments: [name])
            return .success(())
        }
        try result.get()
        knownBuckets.withLock {
            $0.names[name] = nil
            $0.generation += 1
        }
    }

    // MARK: Multipart uploads (S3)

    public func insertMultipart(_ upload: MultipartUpload, owner: String?, limit: Int) throws(StoreError) {
        try insertCounting(owner: owner, limit: limit) { db in
            try db.execute(sql: """
                INSERT INTO multipart_uploads (id, key, content_type, cache_control, content_disposition, content_encoding,
                    expires_header, user_metadata, created, expires, completed_etag, checksum, content_language, owner)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [upload.id, Data(upload.key.bytes), upload.attributes.contentType, upload.attributes.cacheControl,
                                  upload.attributes.contentDisposition, upload.attributes.contentEncoding, upload.attributes.expires,
                                  upload.attributes.userMetadataText, upload.created, upload.expires, upload.completedETag,
                                  upload.checksum, upload.attributes.contentLanguage, owner])
        }
    }

    /// Runs `insert` in a transaction that first counts `owner`'s unfinished uploads (see
    /// `MultipartIndex.insertMultipart`); SQLite's one writer makes the count exact.
    private func insertCounting(owner: String?, limit: Int, _ insert: @escaping (Database) throws -> Void) throws(StoreError) {
        let refused: Bool = try write { db in
            if let owner, limit > 0, let open = try Int.fetchOne(db, sql: """
                SELECT (SELECT COUNT(*) FROM uploads WHERE owner = ?1 AND completed_key IS NULL AND expires > ?2)
                     + (SELECT COUNT(*) FROM multipart_uploads WHERE owner = ?1 AND completed_etag IS NULL AND expires > ?2)
                """, arguments: [owner, Int64(time(nil))]), open >= limit {
                return true
            }
            try insert(db)
            return false
        }
        if refused { throw .tooManyUploads(limit: limit) }
    }

    public func multipart(_ id: String) throws(StoreError) -> MultipartUpload? {
        try run {
            try pool.read { db in
                try Row.fetchOne(db, sql: "SELECT * FROM multipart_uploads WHERE id = ?", arguments: [id])
                    .flatMap { Self.multipart(from: $0, reportingTo: invalidKeys) }
            }
        }
    }

    public func multipartUploads(prefix: [UInt8]) throws(StoreError) -> [MultipartUpload] {
        let upper = Self.upperBound(of: prefix) ?? [0xFF]
        return try run {
            try pool.read { db in
                try Row.fetchAll(db, sql: """
                    SELECT * FROM multipart_uploads WHERE key >= ? AND key < ? AND completed_etag IS NULL ORDER BY key, created
                    """, arguments: [Data(prefix), Data(upper)]).compactMap { Self.multipart(from: $0, reportingTo: invalidKeys) }
            }
        }
    }

    public func savePart(_ part: UploadedPart, of id: String) throws(StoreError) -> UploadedPart? {
        let result: Result<UploadedPart?, StoreError> = try write { db in
            guard try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM multipart_uploads WHERE id = ? AND completed_etag IS NULL)",
                                    arguments: [id]) == true else { return .failure(.uploadNotFound) }
            let previous = try Row.fetchOne(db, sql: "SELECT * FROM multipart_parts WHERE upload = ? AND number = ?",
                                            arguments: [id, part.number]).map(Self.part(from:))
            try db.execute(sql: """
                INSERT OR REPLACE INTO multipart_parts (upload, number, size, md5, modified, checksum) VALUES (?, ?, ?, ?, ?, ?)
                """, arguments: [id, part.number, Int64(part.size), Data(part.md5), part.modified, part.checksum])
            return .success(previous)
        }
        return try result.get()
    }

    private static func part(from row: Row) -> UploadedPart {
        UploadedPart(number: row["number"], size: UInt64(max(0, row["size"] as Int64)), md5: Array(row["md5"] as Data),
                     modified: row["modified"], checksum: row["checksum"])
    }

    public func parts(of id: String) throws(StoreError) -> [UploadedPart] {
        try run {
            try pool.read { db in
                try Row.fetchAll(db, sql: "SELECT * FROM multipart_parts WHERE upload = ? ORDER BY number", arguments: [id]).map(Self.part(from:))
            }
        }
    }

    public func markCompleted(_ id: String, etag: String, checksum: String?) throws(StoreError) {
        try write { db in
            try db.execute(sql: "UPDATE multipart_uploads SET completed_etag = ?, checksum = ? WHERE id = ?", arguments: [etag, checksum, id])
            try db.execute(sql: "DELETE FROM multipart_parts WHERE upload = ?", arguments: [id])
        }
    }

    public func removeMultipart(_ id: String) throws(StoreError) {
        try write { db in
            try db.execute(sql: "DELETE FROM multipart_parts WHERE upload = ?", arguments: [id])
            try db.execute(sql: "DELETE FROM multipart_uploads WHERE id = ?", arguments: [id])
        }
    }

    public func expiredMultipartUploads(now: Int64) throws(StoreError) -> [String] {
        try run { try pool.read { db in try String.fetchAll(db, sql: "SELECT id FROM multipart_uploads WHERE expires <= ?", arguments: [now]) } }
    }

    /// The upload of a `multipart_uploads` row; nil, reported to `invalid`, if its key fails validation.
    private static func multipart(from row: Row, reportingTo invalid: InvalidKeyRows?) -> MultipartUpload? {
        guard let key = InvalidKeyRows.key(row["key"] as Data, in: "multipart_uploads", reportingTo: invalid) else { return nil }
        return MultipartUpload(
            id: row["id"], key: key,
            attributes: BlobAttributes(contentType: row["content_type"], cacheControl: row["cache_control"],
                                       contentDisposition: row["content_disposition"], contentEncoding: row["content_encoding"],
                                       contentLanguage: row["content_language"], expires: row["expires_header"],
                                       userMetadata: BlobAttributes.userMetadata(fromText: row["user_metadata"])),
            created: row["created"], expires: row["expires"], completedETag: row["completed_etag"], checksum: row["checksum"])
    }

    // MARK: Resumable uploads

    public func insert(_ upload: UploadRecord, owner: String?, limit: Int) throws(StoreError) {
        try insertCounting(owner: owner, limit: limit) { db in
            try db.execute(sql: """
                INSERT INTO uploads (id, length, offset, hash_state, metadata, key, content_type, expires, completed_key,
                                     cache_control, content_disposition, content_encoding, expires_header, user_metadata, owner)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: Self.arguments(upload) + [owner])
        }
    }

    public func upload(_ id: String) throws(StoreError) -> UploadRecord? {
        try run {
            try pool.read { db in
                try Row.fetchOne(db, sql: "SELECT * FROM uploads WHERE id = ?", arguments: [id]).flatMap { Self.upload(from: $0, reportingTo: invalidKeys) }
            }
        }
    }

    public func save(_ upload: UploadRecord) throws(StoreError) {
        try write { db in
            try db.execute(sql: """
                UPDATE uploads SET length = ?2, offset = ?3, hash_state = ?4, metadata = ?5, key = ?6,
                    content_type = ?7, expires = ?8, completed_key = ?9, cache_control = ?10,
                    content_disposition = ?11, content_encoding = ?12, expires_header = ?13, user_metadata = ?14 WHERE id = ?1
                """, arguments: Self.arguments(upload))
        }
    }

    public func removeUpload(_ id: String) throws(StoreError) {
        try write { db in try db.execute(sql: "DELETE FROM uploads WHERE id = ?", arguments: [id]) }
    }

    public func expiredUploads(now: Int64) throws(StoreError) -> [String] {
        try run { try pool.read { db in try String.fetchAll(db, sql: "SELECT id FROM uploads WHERE expires <= ?", arguments: [now]) } }
    }

    private static func arguments(_ upload: UploadRecord) -> StatementArguments {
        [upload.id, upload.length.map { Int64($0) }, Int64(upload.offset), Data(upload.hashState), upload.metadata,
         upload.key.map { Data($0.bytes) }, upload.attributes.contentType, upload.expires, upload.completedKey.map { Data($0.bytes) },
         upload.attributes.cacheControl, upload.attributes.contentDisposition, upload.attributes.contentEncoding,
         upload.attributes.expires, upload.attributes.userMetadataText]
    }

    /// The upload of an `uploads` row; a key or completed key that fails validation is nil, and
    /// reported to `invalid`.
    private static func upload(from row: Row, reportingTo invalid: InvalidKeyRows?) -> UploadRecord? {
        let length: Int64? = row["length"]
        let offset: Int64 = row["offset"]
        let hashState: Data = row["hash_state"]
        let key: Data? = row["key"]
        let completed: Data? = row["completed_key"]
        return UploadRecord(
            id: row["id"], length: length.map { UInt64(max(0, $0)) }, offset: UInt64(max(0, offset)),
            hashState: Array(hashState), metadata: row["metadata"], key: key.flatMap { InvalidKeyRows.key($0, in: "uploads", reportingTo: invalid) },
            attributes: BlobAttributes(contentType: row["content_type"], cacheControl: row["cache_control"],
                                       contentDisposition: row["content_disposition"], contentEncoding: row["content_encoding"],
                                       expires: row["expires_header"],
                                       userMetadata: BlobAttributes.userMetadata(fromText: row["user_metadata"])),
            expires: row["expires"],
            completedKey: completed.flatMap { InvalidKeyRows.key($0, in: "uploads", reportingTo: invalid) })
    }

    /// The smallest byte string greater than every string starting with `prefix`, or nil if none.
    static func upperBound(of prefix: [UInt8]) -> [UInt8]? {
        var bound = prefix
        while let last = bound.last {
            if last < 0xFF {
                bound[bound.count - 1] = last + 1
                return bound
            }
            bound.removeLast()
        }
        return nil
    }

    private static func fetch(_ key: BlobKey, in db: Database) throws -> BlobRecord? {
        let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM blobs WHERE key = ?"),
                                   arguments: [Data(key.bytes)])
        return row.flatMap { record(from: $0) }
    }

    /// The record of a `blobs` row; nil, reported to `invalid`, if its key fails validation.
    private static func record(from row: Row, reportingTo invalid: InvalidKeyRows? = nil) -> BlobRecord? {
        let keyBytes: Data = row["key"]
        guard let key = InvalidKeyRows.key(keyBytes, in: "blobs", reportingTo: invalid) else { return nil }
        let size: Int64 = row["size"]
        let sha256: Data = row["sha256"]
        return BlobRecord(key: key, version: row["version"], size: UInt64(max(0, size)),
                          sha256: Array(sha256),
                          attributes: BlobAttributes(contentType: row["content_type"], cacheControl: row["cache_control"],
                                                     contentDisposition: row["content_disposition"],
                                                     contentEncoding: row["content_encoding"], contentLanguage: row["content_language"],
                                                     expires: row["expires"],
                                                     userMetadata: BlobAttributes.userMetadata(fromText: row["user_metadata"])),
                          modified: row["modified"], md5: (row["md5"] as Data?).map { Array($0) }, parts: row["parts"],
                          partSizes: BlobRecord.partSizes(fromText: row["part_sizes"]),
                          partChecksums: BlobRecord.partChecksums(fromText: row["part_checksums"]), checksum: row["checksum"])
    }

    /// A write transaction, durable when this returns.
    private func write<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        try run { try pool.write(body) }
    }

    private func run<T>(_ body: () throws -> T) throws(StoreError) -> T {
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

extension Array {
    /// Empties the array and returns what it held.
    mutating func removeAllReturning() -> [Element] {
        defer { removeAll() }
        return self
    }
}

import BlobCatalog
import BlobCore
import Foundation
import GRDB

/// The index in SQLite: noncurrent versions and delete markers (`blob_versions`) beside the
/// current records (`blobs`), for versioned buckets (see `VersionIndex`).
extension SQLiteBlobIndex: VersionIndex {
    /// The columns a version keeps, the same in `blobs` and `blob_versions` (listed here, not
    /// taken from the row codec, so that a column `blobs` alone gains needs no copy here).
    static let versionColumns = [
        "key", "version", "size", "sha256", "content_type", "modified", "cache_control", "content_disposition", "content_encoding",
        "expires", "user_metadata", "md5", "parts", "checksum", "part_sizes", "content_language", "part_checksums", "versioned",
        "ttl_expires", "expires_at", "lock_mode", "lock_until", "legal_hold",
    ].joined(separator: ", ")

    static let versionsSchema = """
        ALTER TABLE blobs ADD COLUMN versioned INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE blob_versions (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            key BLOB NOT NULL, version TEXT NOT NULL, size INTEGER NOT NULL, sha256 BLOB NOT NULL, content_type TEXT NOT NULL,
            modified INTEGER NOT NULL, cache_control TEXT, content_disposition TEXT, content_encoding TEXT, expires TEXT,
            user_metadata TEXT, md5 BLOB, parts INTEGER, checksum TEXT, part_sizes TEXT, content_language TEXT, part_checksums TEXT,
            ttl_expires INTEGER, expires_at INTEGER,
            versioned INTEGER NOT NULL DEFAULT 0, delete_marker INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX blob_versions_by_key ON blob_versions (key, seq);
        CREATE INDEX blob_versions_by_version ON blob_versions (version);
        """

    // MARK: Inside a commit

    /// What a commit under `condition` does with `current`, the record it replaces: keeps it
    /// as a noncurrent version, or makes its file garbage; when suspended, the key's noncurrent
    /// `null` version goes too.
    static func replace(_ current: BlobRecord?, key: BlobKey, under condition: WriteCondition, in db: Database) throws {
        let deadline = condition.noncurrentDeadline(at: Int64(time(nil)))
        if let current {
            if condition.versioning.keeps(current) {
                try archive(key, sweepAt: deadline, in: db)
            } else {
                try addGarbage(current.version, in: db)
            }
        } else if let deadline {
            // The delete marker this write goes over (if any) stops being current now.
            try db.cachedStatement(sql: """
                UPDATE blob_versions SET sweep_at = ? WHERE seq = (SELECT MAX(seq) FROM blob_versions WHERE key = ?) AND delete_marker = 1
                """).execute(arguments: [deadline, Data(key.bytes)])
        }
        if condition.versioning == .suspended {
            for version in try dropNullNoncurrent(key, in: db) { try addGarbage(version, in: db) }
        }
    }

    /// Deletes the key of `marker` as a DELETE does in a bucket whose versioning is `versioning`
    /// (enabled or suspended): `current` (if any) becomes a noncurrent version or garbage, a
    /// suspended bucket's noncurrent `null` version goes, and `marker` is the latest version.
    /// Returns the versions made garbage (already recorded as such). `noncurrentDeadline` stamps
    /// the version made noncurrent; a marker left alone is stamped for the sweep at once.
    static func markDeleted(_ current: BlobRecord?, marker: BlobRecord, versioning: BucketVersioning, noncurrentDeadline: Int64?,
                            in db: Database) throws -> [String] {
        var garbage: [String] = []
        if let current {
            if versioning.keeps(current) { try archive(marker.key, sweepAt: noncurrentDeadline, in: db) } else { garbage.append(current.version) }
            try db.execute(sql: "DELETE FROM blobs WHERE key = ?", arguments: [Data(marker.key.bytes)])
        }
        if versioning == .suspended { garbage += try dropNullNoncurrent(marker.key, in: db) }
        try insertNoncurrent(marker, deleteMarker: true, in: db)
        for version in garbage { try addGarbage(version, in: db) }
        try stampIfLoneMarker(marker.key, at: marker.modified, in: db)
        return garbage
    }

    /// Copies the key's current row into `blob_versions`, as its newest noncurrent version, to
    /// be looked at by the lifecycle sweep at `sweepAt` (nil: no rule removes it).
    private static func archive(_ key: BlobKey, sweepAt: Int64?, in db: Database) throws {
        // A cached statement: a versioned bucket's every overwrite runs it.
        try db.cachedStatement(sql: "INSERT INTO blob_versions (\(versionColumns), sweep_at) SELECT \(versionColumns), ? FROM blobs WHERE key = ?")
            .execute(arguments: [sweepAt, Data(key.bytes)])
    }

    /// Stamps the key's delete marker for the sweep at `now` when it is the key's only version
    /// left (an expired object delete marker, which a rule may remove).
    static func stampIfLoneMarker(_ key: BlobKey, at now: Int64, in db: Database) throws {
        let bytes = Data(key.bytes)
        guard try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM blobs WHERE key = ?)"), arguments: [bytes]) == false
        else { return }
        let rows = try Row.fetchAll(db.cachedStatement(sql: "SELECT seq, delete_marker FROM blob_versions WHERE key = ? LIMIT 2"),
                                    arguments: [bytes])
        guard rows.count == 1, let row = rows.first, (row["delete_marker"] as Int64? ?? 0) != 0 else { return }
        try db.cachedStatement(sql: "UPDATE blob_versions SET sweep_at = ? WHERE seq = ?").execute(arguments: [now, row["seq"] as Int64])
    }

    /// Removes the key's noncurrent `null` versions; returns the file versions among them.
    private static func dropNullNoncurrent(_ key: BlobKey, in db: Database) throws -> [String] {
        let rows = try Row.fetchAll(db, sql: "SELECT seq, version, delete_marker FROM blob_versions WHERE key = ? AND versioned = 0",
                                    arguments: [Data(key.bytes)])
        try db.execute(sql: "DELETE FROM blob_versions WHERE key = ? AND versioned = 0", arguments: [Data(key.bytes)])
        return rows.filter { ($0["delete_marker"] as Int64) == 0 }.map { $0["version"] }
    }

    // MARK: VersionIndex

    public func deleteMarking(_ key: BlobKey, marker: BlobRecord, if condition: WriteCondition,
                              events: EventDraft?) throws(StoreError) -> VersionRemoval {
        let result: Result<VersionRemoval, StoreError> = try write { db in
            let current = try Self.fetch(key, in: db)
            if current == nil, condition.namesSomething { return .failure(.notFound) }
            if current != nil, let failure = condition.failure(for: current) { return .failure(failure) }
            let garbage = try Self.markDeleted(current, marker: marker, versioning: condition.versioning,
                                               noncurrentDeadline: condition.noncurrentDeadline(at: marker.modified), in: db)
            if let events { try insertEvents(events, for: marker, in: db) }
            return .success(VersionRemoval(removed: current.map { BlobVersion(record: $0, latest: false) },
                                           marker: BlobVersion(record: marker, deleteMarker: true, latest: true), garbage: garbage))
        }
        return try result.get()
    }

    public func removeVersion(_ key: BlobKey, id: String, if condition: WriteCondition,
                              events: EventDraft?) throws(StoreError) -> VersionRemoval {
        let result: Result<VersionRemoval, StoreError> = try write { db in
            let current = try Self.fetch(key, in: db)
            var removal = VersionRemoval()
            let now = Int64(time(nil))
            if let current, current.versionID == id {
                if let failure = condition.failure(for: current) ?? condition.lockFailure(removing: current, at: now) {
                    return .failure(failure)
                }
                try db.execute(sql: "DELETE FROM blobs WHERE key = ?", arguments: [Data(key.bytes)])
                removal.removed = BlobVersion(record: current, latest: true)
                removal.garbage = [current.version]
            } else {
                guard let (seq, found) = try Self.noncurrent(key, id: id, in: db) else { return .failure(.notFound) }
                if let failure = condition.failure(for: found.record) ?? condition.lockFailure(removing: found.record, at: now) {
                    return .failure(failure)
                }
                var removed = found
                let newestSeq = current == nil ? try Self.newest(key, in: db)?.seq : nil
                removed.latest = newestSeq == seq
                try db.execute(sql: "DELETE FROM blob_versions WHERE seq = ?", arguments: [seq])
                removal.removed = removed
                if !found.deleteMarker { removal.garbage = [found.record.version] }
            }
            if try Self.fetch(key, in: db) == nil, let (seq, newest) = try Self.newest(key, in: db), !newest.deleteMarker {
                try db.execute(sql: "INSERT INTO blobs (\(Self.versionColumns)) SELECT \(Self.versionColumns) FROM blob_versions WHERE seq = ?",
                               arguments: [seq])
                try db.execute(sql: "DELETE FROM blob_versions WHERE seq = ?", arguments: [seq])
            }
            try Self.stampIfLoneMarker(key, at: now, in: db)
            for version in removal.garbage { try Self.addGarbage(version, in: db) }
            if let events, let removed = removal.removed { try insertEvents(events, for: removed.record, in: db) }
            return .success(removal)
        }
        return try result.get()
    }

    public func version(_ key: BlobKey, id: String) throws(StoreError) -> BlobVersion? {
        try run {
            try pool.read { db in
                let current = try Self.fetch(key, in: db)
                if let current, current.versionID == id { return BlobVersion(record: current, latest: true) }
                guard let (seq, found) = try Self.noncurrent(key, id: id, in: db) else { return nil }
                var version = found
                let newestSeq = current == nil ? try Self.newest(key, in: db)?.seq : nil
                version.latest = newestSeq == seq
                return version
            }
        }
    }

    public func newestNoncurrent(_ key: BlobKey) throws(StoreError) -> BlobVersion? {
        try run { try pool.read { db in try Self.newest(key, in: db)?.version } }
    }

    public func versions(prefix: [UInt8], after cursor: VersionCursor?, limit: Int) throws(StoreError) -> [BlobVersion] {
        try run {
            try pool.read { db in
                var out: [BlobVersion] = []
                var afterKey = cursor?.key
                if let cursor, let id = cursor.versionID, cursor.key.starts(with: prefix), let key = try? BlobKey(validating: cursor.key) {
                    let all = try Self.allVersions(of: key, in: db)
                    if let index = all.firstIndex(where: { $0.id == id }) { out += all[(index + 1)...].prefix(limit) }
                }
                while out.count < limit {
                    let keys = try Self.versionedKeys(prefix: prefix, after: afterKey, limit: limit - out.count, in: db)
                    guard let last = keys.last else { break }
                    for bytes in keys {
                        guard let key = try? BlobKey(validating: bytes) else { continue }
                        out += try Self.allVersions(of: key, in: db).prefix(limit - out.count)
                        if out.count >= limit { break }
                    }
                    afterKey = last
                }
                return out
            }
        }
    }

    // MARK: Export (migrate-index)

    /// Up to `limit` rows of noncurrent versions and delete markers after row `seq`, oldest
    /// first (so each key's versions keep their order wherever they are inserted in turn), and
    /// the last row's seq (nil when there are no more rows; a row whose key fails validation
    /// is skipped but still counts).
    public func exportVersions(after seq: Int64, limit: Int) throws(StoreError) -> (versions: [BlobVersion], last: Int64?) {
        try run {
            try pool.read { db in
                let rows = try Row.fetchAll(db, sql: "SELECT * FROM blob_versions WHERE seq > ? ORDER BY seq LIMIT ?",
                                            arguments: [seq, limit])
                return (rows.compactMap(Self.version(from:)), rows.last.map { $0["seq"] })
            }
        }
    }

    // MARK: Rows

    /// Every version of `key`, newest first: the current record, then the noncurrent ones.
    private static func allVersions(of key: BlobKey, in db: Database) throws -> [BlobVersion] {
        var out: [BlobVersion] = []
        if let current = try fetch(key, in: db) { out.append(BlobVersion(record: current, latest: true)) }
        let rows = try Row.fetchAll(db, sql: "SELECT * FROM blob_versions WHERE key = ? ORDER BY seq DESC", arguments: [Data(key.bytes)])
        for row in rows {
            guard var version = Self.version(from: row) else { continue }
            version.latest = out.isEmpty
            out.append(version)
        }
        return out
    }

    /// Keys with a current record or a noncurrent version, starting with `prefix`, after `after`.
    private static func versionedKeys(prefix: [UInt8], after: [UInt8]?, limit: Int, in db: Database) throws -> [[UInt8]] {
        // From `after` (exclusive) when it sorts at or past the prefix, else from the prefix.
        let strict = after.map { !$0.lexicographicallyPrecedes(prefix) } ?? false
        let lower = strict ? after ?? prefix : prefix
        let upper = prefixUpperBound(of: prefix)
        let range = "key \(strict ? ">" : ">=") ?" + (upper == nil ? "" : " AND key < ?")
        var arguments: StatementArguments = [Data(lower)]
        if let upper { arguments += [Data(upper)] }
        let all = arguments + arguments + [limit]
        return try Data.fetchAll(db, sql: "SELECT key FROM blobs WHERE \(range) UNION SELECT key FROM blob_versions WHERE \(range) "
                                 + "ORDER BY key LIMIT ?", arguments: all).map { Array($0) }
    }

    /// The noncurrent version `id` of `key` (`null`: the one without an id), with its row's seq.
    static func noncurrent(_ key: BlobKey, id: String, in db: Database) throws -> (seq: Int64, version: BlobVersion)? {
        let row = id == "null"
            ? try Row.fetchOne(db, sql: "SELECT * FROM blob_versions WHERE key = ? AND versioned = 0 ORDER BY seq DESC LIMIT 1",
                               arguments: [Data(key.bytes)])
            : try Row.fetchOne(db, sql: "SELECT * FROM blob_versions WHERE key = ? AND version = ? AND versioned = 1 LIMIT 1",
                               arguments: [Data(key.bytes), id])
        guard let row, let version = version(from: row) else { return nil }
        return (row["seq"], version)
    }

    /// The newest noncurrent version of `key`, with its row's seq.
    private static func newest(_ key: BlobKey, in db: Database) throws -> (seq: Int64, version: BlobVersion)? {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM blob_versions WHERE key = ? ORDER BY seq DESC LIMIT 1",
                                         arguments: [Data(key.bytes)]),
              let version = version(from: row) else { return nil }
        return (row["seq"], version)
    }

    /// A noncurrent version's row (not latest; the caller decides).
    static func version(from row: Row) -> BlobVersion? {
        guard var record = SQLiteBlobRow.record(from: row) else { return nil }
        record.versioned = (row["versioned"] as Int64? ?? 0) != 0
        return BlobVersion(record: record, deleteMarker: (row["delete_marker"] as Int64? ?? 0) != 0, latest: false)
    }

    /// Inserts a noncurrent version (a delete marker) as the key's newest.
    private static func insertNoncurrent(_ record: BlobRecord, deleteMarker: Bool, in db: Database) throws {
        try db.execute(sql: """
            INSERT INTO blob_versions (key, version, size, sha256, content_type, modified, versioned, delete_marker)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """, arguments: [Data(record.key.bytes), record.version, Int64(record.size), Data(record.sha256), record.contentType,
                             record.modified, record.versioned ? 1 : 0, deleteMarker ? 1 : 0])
    }
}

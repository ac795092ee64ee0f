import BlobCatalog
import BlobCore
import Foundation
import PostgresClient

/// The index in PostgreSQL: noncurrent versions and delete markers (`blob_versions`) beside
/// the current records (`blobs`), for versioned buckets (see `VersionIndex`).
extension PostgresBlobIndex: VersionIndex {
    /// The columns a version keeps, the same in `blobs` and `blob_versions` (listed here, not
    /// taken from the row codec, so that a column `blobs` alone gains needs no copy here).
    static let versionColumns = [
        "key", "version", "size", "sha256", "content_type", "modified", "cache_control", "content_disposition", "content_encoding",
        "expires", "user_metadata", "md5", "parts", "checksum", "part_sizes", "content_language", "part_checksums", "versioned",
        "ttl_expires", "expires_at", "lock_mode", "lock_until", "legal_hold",
    ].joined(separator: ", ")

    static let versionsSchema = """
        ALTER TABLE blobs ADD COLUMN versioned boolean NOT NULL DEFAULT false;
        CREATE TABLE blob_versions (
            seq bigserial PRIMARY KEY,
            key bytea NOT NULL, version text NOT NULL, size bigint NOT NULL, sha256 bytea NOT NULL, content_type text NOT NULL,
            modified bigint NOT NULL, cache_control text, content_disposition text, content_encoding text, expires text,
            user_metadata text, md5 bytea, parts integer, checksum text, part_sizes text, content_language text, part_checksums text,
            ttl_expires bigint, expires_at bigint,
            versioned boolean NOT NULL DEFAULT false, delete_marker boolean NOT NULL DEFAULT false
        );
        CREATE INDEX blob_versions_by_key ON blob_versions (key, seq);
        CREATE INDEX blob_versions_by_version ON blob_versions (version COLLATE "C");
        """

    static let selectVersion = "SELECT seq, \(versionColumns), delete_marker FROM blob_versions"

    // MARK: Inside a commit

    /// What a commit under `condition` does with `previous`, the record it replaces: keeps it
    /// as a noncurrent version (copied before the row is overwritten), or makes its file
    /// garbage; when suspended, the key's noncurrent `null` version goes too.
    static func replace(_ previous: BlobRecord?, key: BlobKey, under condition: WriteCondition, garbage: inout [String],
                        in connection: PostgresConnection) throws(PostgresError) {
        let deadline = condition.noncurrentDeadline(at: Int64(time(nil)))
        if let previous {
            if condition.versioning.keeps(previous) { try archive(key, sweepAt: deadline, in: connection) } else { garbage.append(previous.version) }
        } else if let deadline {
            // The delete marker this write goes over (if any) stops being current now.
            try connection.execute("""
                UPDATE blob_versions SET sweep_at = $1
                WHERE seq = (SELECT MAX(seq) FROM blob_versions WHERE key = $2) AND delete_marker
                """, [.int(deadline), .bytes(key.bytes)])
        }
        if condition.versioning == .suspended { garbage += try dropNullNoncurrent(key, in: connection) }
    }

    /// Deletes the key of `marker` as a DELETE does in a bucket whose versioning is `versioning`
    /// (enabled or suspended), with the key's lock held: `current` (if any) becomes a noncurrent
    /// version or garbage, a suspended bucket's noncurrent `null` version goes, and `marker` is
    /// the latest version. Returns the versions made garbage (already recorded as such).
    /// `noncurrentDeadline` stamps the version made noncurrent; a marker left alone is stamped
    /// for the sweep at once.
    static func markDeleted(_ current: BlobRecord?, marker: BlobRecord, versioning: BucketVersioning, noncurrentDeadline: Int64?,
                            in connection: PostgresConnection) throws(PostgresError) -> [String] {
        let key = marker.key
        var garbage: [String] = []
        if let current {
            if versioning.keeps(current) { try archive(key, sweepAt: noncurrentDeadline, in: connection) } else { garbage.append(current.version) }
            try connection.execute("DELETE FROM blobs WHERE key = $1", [.bytes(key.bytes)])
        }
        if versioning == .suspended { garbage += try dropNullNoncurrent(key, in: connection) }
        try connection.execute("""
            INSERT INTO blob_versions (key, version, size, sha256, content_type, modified, versioned, delete_marker)
            VALUES ($1, $2, 0, $3, '', $4, $5, true)
            """, [.bytes(key.bytes), .text(marker.version), .bytes(marker.sha256), .int(marker.modified),
                  .text(marker.versioned ? "t" : "f")])
        try addGarbage(garbage, in: connection)
        try stampIfLoneMarker(key, at: marker.modified, in: connection)
        return garbage
    }

    /// Stamps the key's delete marker for the sweep at `now` when it is the key's only version
    /// left (an expired object delete marker, which a rule may remove).
    static func stampIfLoneMarker(_ key: BlobKey, at now: Int64, in connection: PostgresConnection) throws(PostgresError) {
        try connection.execute("""
            UPDATE blob_versions v SET sweep_at = $2 WHERE v.key = $1 AND v.delete_marker
            AND NOT EXISTS (SELECT 1 FROM blobs WHERE key = $1) AND NOT EXISTS (SELECT 1 FROM blob_versions o WHERE o.key = $1 AND o.seq <> v.seq)
            """, [.bytes(key.bytes), .int(now)])
    }

    /// Takes the key's lock (as `lock`) if no other transaction holds it; false if one does.
    static func tryLock(_ key: BlobKey, in connection: PostgresConnection) throws(PostgresError) -> Bool {
        try connection.execute("SELECT pg_try_advisory_xact_lock(hashtextextended(encode($1::bytea, 'hex'), 25)) AS locked",
                               [.bytes(key.bytes)]).rows.first?.bool("locked") == true
    }

    /// Copies the key's current row into `blob_versions`, to be looked at by the lifecycle sweep
    /// at `sweepAt` (nil: no rule removes it).
    private static func archive(_ key: BlobKey, sweepAt: Int64?, in connection: PostgresConnection) throws(PostgresError) {
        try connection.execute("INSERT INTO blob_versions (\(versionColumns), sweep_at) SELECT \(versionColumns), $2 FROM blobs WHERE key = $1",
                               [.bytes(key.bytes), sweepAt.map { .int($0) } ?? .null])
    }

    private static func dropNullNoncurrent(_ key: BlobKey, in connection: PostgresConnection) throws(PostgresError) -> [String] {
        try connection.execute("DELETE FROM blob_versions WHERE key = $1 AND NOT versioned RETURNING version, delete_marker",
                               [.bytes(key.bytes)]).rows.filter { $0.bool("delete_marker") == false }.compactMap { $0.text("version") }
    }

    /// Serializes the versioned operations on one key across nodes (its row may not exist).
    private static func lock(_ key: BlobKey, in connection: PostgresConnection) throws(PostgresError) {
        try connection.execute("SELECT pg_advisory_xact_lock(hashtextextended(encode($1::bytea, 'hex'), 25))", [.bytes(key.bytes)])
    }

    // MARK: VersionIndex

    public func deleteMarking(_ key: BlobKey, marker: BlobRecord, if condition: WriteCondition,
                              events: EventDraft?) throws(StoreError) -> VersionRemoval {
        let result: Result<VersionRemoval, StoreError> = try run { () throws(PostgresError) in
            try pool.transaction { connection throws(PostgresError) in
                try Self.lock(key, in: connection)
                let current = try Self.fetchForUpdate([key], in: connection)[key]
                if current == nil, condition.namesSomething { return .failure(.notFound) }
                if current != nil, let failure = condition.failure(for: current) { return .failure(failure) }
                let garbage = try Self.markDeleted(current, marker: marker, versioning: condition.versioning,
                                                   noncurrentDeadline: condition.noncurrentDeadline(at: marker.modified), in: connection)
                if let events { try Self.insertEvents(events, for: marker, in: connection) }
                return .success(VersionRemoval(removed: current.map { BlobVersion(record: $0, latest: false) },
                                               marker: BlobVersion(record: marker, deleteMarker: true, latest: true), garbage: garbage))
            }
        }
        return try result.get()
    }

    public func removeVersion(_ key: BlobKey, id: String, if condition: WriteCondition,
                              events: EventDraft?) throws(StoreError) -> VersionRemoval {
        let result: Result<VersionRemoval, StoreError> = try run { () throws(PostgresError) in
            try pool.transaction { connection throws(PostgresError) in
                try Self.lock(key, in: connection)
                let current = try Self.fetchForUpdate([key], in: connection)[key]
                var removal = VersionRemoval()
                let now = Int64(time(nil))
                if let current, current.versionID == id {
                    if let failure = condition.failure(for: current) ?? condition.lockFailure(removing: current, at: now) {
                        return .failure(failure)
                    }
                    try connection.execute("DELETE FROM blobs WHERE key = $1", [.bytes(key.bytes)])
                    removal.removed = BlobVersion(record: current, latest: true)
                    removal.garbage = [current.version]
                } else {
                    guard let (seq, found) = try Self.noncurrent(key, id: id, in: connection) else { return .failure(.notFound) }
                    if let failure = condition.failure(for: found.record) ?? condition.lockFailure(removing: found.record, at: now) {
                        return .failure(failure)
                    }
                    var removed = found
                    let newestSeq = current == nil ? try Self.newest(key, in: connection)?.seq : nil
                    removed.latest = newestSeq == seq
                    try connection.execute("DELETE FROM blob_versions WHERE seq = $1", [.int(seq)])
                    removal.removed = removed
                    if !found.deleteMarker { removal.garbage = [found.record.version] }
                }
                if try Self.fetchForUpdate([key], in: connection)[key] == nil, let (seq, newest) = try Self.newest(key, in: connection),
                   !newest.deleteMarker {
                    try connection.execute("INSERT INTO blobs (\(Self.versionColumns)) SELECT \(Self.versionColumns) FROM blob_versions WHERE seq = $1",
                                           [.int(seq)])
                    try connection.execute("DELETE FROM blob_versions WHERE seq = $1", [.int(seq)])
                }
                try Self.stampIfLoneMarker(key, at: now, in: connection)
                try Self.addGarbage(removal.garbage, in: connection)
                if let events, let removed = removal.removed {
                    try Self.insertEvents(events, for: removed.record, in: connection)
                }
                return .success(removal)
            }
        }
        return try result.get()
    }

    public func version(_ key: BlobKey, id: String) throws(StoreError) -> BlobVersion? {
        try run { () throws(PostgresError) in
            try pool.withConnection { connection throws(PostgresError) in
                let current = try Self.fetchForUpdate([key], in: connection, locking: false)[key]
                if let current, current.versionID == id { return BlobVersion(record: current, latest: true) }
                guard let (seq, found) = try Self.noncurrent(key, id: id, in: connection) else { return nil }
                var version = found
                let newestSeq = current == nil ? try Self.newest(key, in: connection)?.seq : nil
                version.latest = newestSeq == seq
                return version
            }
        }
    }

    public func newestNoncurrent(_ key: BlobKey) throws(StoreError) -> BlobVersion? {
        try run { () throws(PostgresError) in
            try pool.withConnection { connection throws(PostgresError) in try Self.newest(key, in: connection)?.version }
        }
    }

    public func versions(prefix: [UInt8], after cursor: VersionCursor?, limit: Int) throws(StoreError) -> [BlobVersion] {
        try run { () throws(PostgresError) in
            try pool.withConnection { connection throws(PostgresError) in
                var out: [BlobVersion] = []
                var afterKey = cursor?.key
                if let cursor, let id = cursor.versionID, cursor.key.starts(with: prefix), let key = try? BlobKey(validating: cursor.key) {
                    let all = try Self.allVersions(of: key, in: connection)
                    if let index = all.firstIndex(where: { $0.id == id }) { out += all[(index + 1)...].prefix(limit) }
                }
                while out.count < limit {
                    let keys = try Self.versionedKeys(prefix: prefix, after: afterKey, limit: limit - out.count, in: connection)
                    guard let last = keys.last else { break }
                    for bytes in keys {
                        guard let key = try? BlobKey(validating: bytes) else { continue }
                        out += try Self.allVersions(of: key, in: connection).prefix(limit - out.count)
                        if out.count >= limit { break }
                    }
                    afterKey = last
                }
                return out
            }
        }
    }

    // MARK: Rows

    private static func allVersions(of key: BlobKey, in connection: PostgresConnection) throws(PostgresError) -> [BlobVersion] {
        var out: [BlobVersion] = []
        if let current = try fetchForUpdate([key], in: connection, locking: false)[key] { out.append(BlobVersion(record: current, latest: true)) }
        let rows = try connection.execute(selectVersion + " WHERE key = $1 ORDER BY seq DESC", [.bytes(key.bytes)]).rows
        for row in rows {
            guard var version = version(from: row) else { continue }
            version.latest = out.isEmpty
            out.append(version)
        }
        return out
    }

    private static func versionedKeys(prefix: [UInt8], after: [UInt8]?, limit: Int,
                                      in connection: PostgresConnection) throws(PostgresError) -> [[UInt8]] {
        let strict = after.map { !$0.lexicographicallyPrecedes(prefix) } ?? false
        let lower = strict ? after ?? prefix : prefix
        let upper = prefixUpperBound(of: prefix)
        let range = "key \(strict ? ">" : ">=") $1" + (upper == nil ? " AND $2::bytea IS NULL" : " AND key < $2")
        return try connection.execute("SELECT key FROM blobs WHERE \(range) UNION SELECT key FROM blob_versions WHERE \(range) "
                                      + "ORDER BY key LIMIT $3", [.bytes(lower), upper.map { .bytes($0) } ?? .null, .int(Int64(limit))])
            .rows.compactMap { $0.bytes("key") }
    }

    static func noncurrent(_ key: BlobKey, id: String,
                                   in connection: PostgresConnection) throws(PostgresError) -> (seq: Int64, version: BlobVersion)? {
        let rows = id == "null"
            ? try connection.execute(selectVersion + " WHERE key = $1 AND NOT versioned ORDER BY seq DESC LIMIT 1", [.bytes(key.bytes)]).rows
            : try connection.execute(selectVersion + " WHERE key = $1 AND version = $2 AND versioned LIMIT 1",
                                     [.bytes(key.bytes), .text(id)]).rows
        guard let row = rows.first, let seq = row.int("seq"), let version = version(from: row) else { return nil }
        return (seq, version)
    }

    private static func newest(_ key: BlobKey, in connection: PostgresConnection) throws(PostgresError) -> (seq: Int64, version: BlobVersion)? {
        let rows = try connection.execute(selectVersion + " WHERE key = $1 ORDER BY seq DESC LIMIT 1", [.bytes(key.bytes)]).rows
        guard let row = rows.first, let seq = row.int("seq"), let version = version(from: row) else { return nil }
        return (seq, version)
    }

    static func version(from row: PostgresRow) -> BlobVersion? {
        guard let record = PostgresBlobRow.record(from: row) else { return nil }
        return BlobVersion(record: record, deleteMarker: row.bool("delete_marker") ?? false, latest: false)
    }
}

import BlobCatalog
import BlobCore
import Foundation
import GRDB

/// The event outbox in SQLite (`EventOutbox`). Ids come from AUTOINCREMENT, so they never come
/// back after a delete: an event's id is its stable `webhook-id` and its sequencer.
extension SQLiteBlobIndex: EventOutbox {
    static let eventsSchema = """
        CREATE TABLE events (
            id INTEGER PRIMARY KEY AUTOINCREMENT, target TEXT NOT NULL, bucket TEXT NOT NULL, key BLOB NOT NULL,
            event TEXT NOT NULL, payload TEXT NOT NULL, created INTEGER NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
            next_attempt INTEGER NOT NULL, claimed_by TEXT, lease_until INTEGER
        );
        CREATE INDEX events_by_target_key ON events (target, key, id);
        """

    /// One row per target of `draft`, reporting `record`, in the caller's transaction. The id
    /// comes from AUTOINCREMENT at the insert, so the payload is kept with an empty sequencer
    /// that reading the row fills in with it (`event(from:)`).
    /// `messages` are the draft's, rendered already (`CommitRequest.messages`), if it has them.
    static func insertEvents(_ draft: EventDraft, messages: [String]? = nil, for record: BlobRecord, in db: Database) throws {
        let millis = Int64(Date().timeIntervalSince1970 * 1000)
        let bucket = EventDraft.bucket(of: record.key).map(String.init) ?? ""
        for (target, payload) in zip(draft.targets, messages ?? draft.messages(for: record, millis: millis)) {
            try db.cachedStatement(sql: """
                INSERT INTO events (target, bucket, key, event, payload, created, next_attempt) VALUES (?, ?, ?, ?, ?, ?, ?)
                """).execute(arguments: [target.target, bucket, Data(record.key.bytes), draft.name, payload, millis, millis])
        }
    }

    /// Reads first, and writes only when there is something to claim: this process is the
    /// file's one writer, and its one delivery loop the one claimer, so nothing moves between.
    public func claimEvents(node: String, now: Int64, leaseUntil: Int64, limit: Int) throws(StoreError) -> [OutboxEvent] {
        let events = try run {
            try pool.read { db in
                try Row.fetchAll(db.cachedStatement(sql: """
                    SELECT * FROM events e WHERE e.next_attempt <= ? AND (e.lease_until IS NULL OR e.lease_until < ? OR e.claimed_by = ?)
                    AND NOT EXISTS (SELECT 1 FROM events p WHERE p.target = e.target AND p.key = e.key AND p.id < e.id)
                    ORDER BY e.id LIMIT ?
                    """), arguments: [now, now, node, limit]).map(Self.event(from:))
            }
        }
        guard !events.isEmpty else { return [] }
        return try write { db in
            for event in events {
                try db.cachedStatement(sql: "UPDATE events SET claimed_by = ?, lease_until = ? WHERE id = ?")
                    .execute(arguments: [node, leaseUntil, event.id])
            }
            return events
        }
    }

    public func removeEvents(_ ids: [Int64]) throws(StoreError) {
        guard !ids.isEmpty else { return }
        try write { db in
            for id in ids { try db.cachedStatement(sql: "DELETE FROM events WHERE id = ?").execute(arguments: [id]) }
        }
    }

    public func retryEvents(_ retries: [EventRetry]) throws(StoreError) {
        guard !retries.isEmpty else { return }
        try write { db in
            for retry in retries {
                try db.cachedStatement(sql: "UPDATE events SET attempts = ?, next_attempt = ?, claimed_by = NULL, lease_until = NULL WHERE id = ?")
                    .execute(arguments: [retry.attempts, retry.nextAttempt, retry.id])
            }
        }
    }

    public func pendingEvents(after: Int64?, limit: Int) throws(StoreError) -> (events: [OutboxEvent], total: Int) {
        try run {
            try pool.read { db in
                let rows = try Row.fetchAll(db, sql: "SELECT * FROM events WHERE id > ? ORDER BY id LIMIT ?", arguments: [after ?? 0, limit])
                let total = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM events") ?? 0
                return (rows.map(Self.event(from:)), total)
            }
        }
    }

    public func eventQueueStats() throws(StoreError) -> [String: (count: Int, oldest: Int64)] {
        try run {
            try pool.read { db in
                var stats: [String: (count: Int, oldest: Int64)] = [:]
                // Counted in the (target, key, id) index, not the table and its messages; the
                // oldest is the first by id (ids grow with time).
                for row in try Row.fetchAll(db, sql: "SELECT target, COUNT(*) AS n FROM events INDEXED BY events_by_target_key GROUP BY target") {
                    let target: String = row["target"]
                    let oldest = try Int64.fetchOne(db, sql: "SELECT created FROM events NOT INDEXED WHERE target = ? ORDER BY id LIMIT 1", arguments: [target])
                    stats[target] = (row["n"], oldest ?? 0)
                }
                return stats
            }
        }
    }

    private static func event(from row: Row) -> OutboxEvent {
        let id: Int64 = row["id"]
        return OutboxEvent(id: id, target: row["target"], bucket: row["bucket"], key: Array(row["key"] as Data), event: row["event"],
                           payload: EventJSON.fillingSequencer(row["payload"], with: id), created: row["created"],
                           attempts: row["attempts"], nextAttempt: row["next_attempt"])
    }
}

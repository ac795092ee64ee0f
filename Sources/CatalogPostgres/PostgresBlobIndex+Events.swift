import BlobCatalog
import BlobCore
import Foundation
import PostgresClient

/// The event outbox in PostgreSQL (`EventOutbox`), shared by the nodes: a claim locks the rows
/// it takes with `FOR UPDATE SKIP LOCKED` and leases them to its node, so each event has one
/// deliverer at a time, and a dead node's leases run out for another to take over. Claims,
/// deletions and retries commit without waiting for the WAL flush (`unsyncedTransaction`), so
/// that the delivery loop does not take flushes from the commits.
extension PostgresBlobIndex: EventOutbox {
    static let eventsSchema = """
        CREATE TABLE events (
            id bigserial PRIMARY KEY, target text NOT NULL, bucket text NOT NULL, key bytea NOT NULL, event text NOT NULL,
            payload text NOT NULL, created bigint NOT NULL, attempts integer NOT NULL DEFAULT 0, next_attempt bigint NOT NULL,
            claimed_by text, lease_until bigint
        );
        CREATE INDEX events_by_target_key ON events (target, key, id);
        """

    /// One row per target of `draft`, in the caller's transaction, after the key's row is
    /// locked: the id drawn at the insert (the message's sequencer, filled in when the row is
    /// read) grows per key. `facts` are the draft's, made already, if it has them.
    static func insertEvents(_ draft: EventDraft, facts: [EventFacts], for record: BlobRecord,
                             in connection: PostgresConnection) throws(PostgresError) {
        let bucket = EventDraft.bucket(of: record.key).map(String.init) ?? ""
        for (target, fact) in zip(draft.targets, facts) {
            try connection.execute("""
                INSERT INTO events (target, bucket, key, event, payload, created, next_attempt) VALUES ($1, $2, $3, $4, $5, $6, $6)
                """, [.text(target.target), .text(bucket), .bytes(record.key.bytes), .text(draft.name),
                      .text(fact.message(sequencer: nil)), .int(fact.millis)])
        }
    }

    /// Reads what is due oldest first by `events_by_due`; the events come back in id order.
    public func claimEvents(node: String, now: Int64, leaseUntil: Int64, limit: Int) throws(StoreError) -> [OutboxEvent] {
        try unsyncedTransaction { connection throws(PostgresError) in
            let rows = try connection.execute(Self.claimQuery, [.int(now), .text(node), .int(Int64(limit))]).rows
            let events = rows.compactMap(Self.event(from:)).sorted { $0.id < $1.id }
            if !events.isEmpty {
                try connection.execute("UPDATE events SET claimed_by = $1, lease_until = $2 WHERE id = ANY($3::bigint[])",
                                       [.text(node), .int(leaseUntil), .text("{" + events.map { String($0.id) }.joined(separator: ",") + "}")])
            }
            return events
        }
    }

    private static let claimQuery = """
        SELECT \(eventColumns) FROM events e
        WHERE e.next_attempt <= $1 AND (e.lease_until IS NULL OR e.lease_until < $1 OR e.claimed_by = $2)
        AND NOT EXISTS (SELECT 1 FROM events p WHERE p.target = e.target AND p.key = e.key AND p.id < e.id)
        ORDER BY e.next_attempt, e.id LIMIT $3 FOR UPDATE OF e SKIP LOCKED
        """

    /// The plan of a claim, for tests.
    public func eventClaimPlan() throws(StoreError) -> String {
        try run { () throws(PostgresError) in
            try pool.withConnection { connection throws(PostgresError) in
                try connection.execute("EXPLAIN " + Self.claimQuery, [.int(0), .text("n"), .int(1)]).rows
                    .compactMap { $0.text("QUERY PLAN") }.joined(separator: "\n")
            }
        }
    }

    public func removeEvents(_ ids: [Int64]) throws(StoreError) {
        guard !ids.isEmpty else { return }
        try unsyncedTransaction { connection throws(PostgresError) in
            _ = try connection.execute("DELETE FROM events WHERE id = ANY($1::bigint[])", [.text("{" + ids.map(String.init).joined(separator: ",") + "}")])
        }
    }

    public func retryEvents(_ retries: [EventRetry]) throws(StoreError) {
        guard !retries.isEmpty else { return }
        func array<T>(_ values: [T]) -> PostgresValue { .text("{" + values.map { "\($0)" }.joined(separator: ",") + "}") }
        try unsyncedTransaction { connection throws(PostgresError) in
            _ = try connection.execute("""
            UPDATE events SET attempts = r.attempts, next_attempt = r.next_attempt, claimed_by = NULL, lease_until = NULL
            FROM unnest($1::bigint[], $2::int[], $3::bigint[]) AS r(id, attempts, next_attempt) WHERE events.id = r.id
            """, [array(retries.map(\.id)), array(retries.map(\.attempts)), array(retries.map(\.nextAttempt))])
        }
    }

    public func pendingEvents(after: Int64?, limit: Int) throws(StoreError) -> (events: [OutboxEvent], total: Int) {
        let events = try rows("SELECT \(Self.eventColumns) FROM events e WHERE id > $1 ORDER BY id LIMIT $2",
                              [.int(after ?? 0), .int(Int64(limit))]).compactMap(Self.event(from:))
        let total = try rows("SELECT COUNT(*) AS n FROM events", []).first?.int("n") ?? 0
        return (events, Int(total))
    }

    public func eventQueueStats() throws(StoreError) -> [String: (count: Int, oldest: Int64)] {
        var stats: [String: (count: Int, oldest: Int64)] = [:]
        for row in try rows("SELECT target, COUNT(*) AS n, MIN(created) AS oldest FROM events GROUP BY target", []) {
            guard let target = row.text("target"), let count = row.int("n"), let oldest = row.int("oldest") else { continue }
            stats[target] = (Int(count), oldest)
        }
        return stats
    }

    private static let eventColumns = "e.id, e.target, e.bucket, e.key, e.event, e.payload, e.created, e.attempts, e.next_attempt"

    private static func event(from row: PostgresRow) -> OutboxEvent? {
        guard let id = row.int("id"), let target = row.text("target"), let bucket = row.text("bucket"), let key = row.bytes("key"),
              let event = row.text("event"), let payload = row.text("payload"), let created = row.int("created"),
              let attempts = row.int("attempts"), let next = row.int("next_attempt") else { return nil }
        return OutboxEvent(id: id, target: target, bucket: bucket, key: key, event: event,
                           payload: EventJSON.fillingSequencer(payload, with: id), created: created, attempts: Int(attempts), nextAttempt: next)
    }
}

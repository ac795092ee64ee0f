import BlobCatalog
import BlobCore
import Foundation
import GRDB

/// The event outbox in SQLite (`EventOutbox`), shaped so that a commit pays one row appended at
/// the end of a table with no other index: `event_queue` holds events never tried, in id order;
/// an event released for another attempt moves to `event_retries`, whose indexes keep each key's
/// order (a later event waits while an earlier one of its (target, key) is there) and find what
/// is due. A row keeps the message's facts, rendered when the row is read for delivery.
///
/// One process writes the file, and its delivery loop is the one claimer: a claim only reads,
/// and every event it hands out is removed or released before the next claim. Claims, deletions
/// and retries commit without waiting for the disk (`writeUnsynced`).
///
/// Ids never come back after a delete, so an event's id is its stable `webhook-id` and its
/// sequencer: this process hands them out in order (`FreshEvents.takeID`), from one more than
/// the largest in either table and than `event_ids.floor` (which every deletion raises to the
/// largest id it removes) when it opened the file (`eventIDsQuery`).
extension SQLiteBlobIndex: EventOutbox {
    /// The columns of both tables but the retry state; a row has its facts or (moved from the
    /// first outbox) a rendered `payload`.
    private static let eventColumns = """
        id INTEGER PRIMARY KEY, target TEXT NOT NULL, bucket TEXT NOT NULL, key BLOB NOT NULL, event TEXT NOT NULL,
        created INTEGER NOT NULL, sha256 BLOB, facts TEXT, payload TEXT
        """
    private static let columnNames = "id, target, bucket, key, event, created, sha256, facts, payload"

    static let eventQueueSchema = """
        CREATE TABLE event_queue (\(eventColumns));
        CREATE TABLE event_retries (\(eventColumns), attempts INTEGER NOT NULL, next_attempt INTEGER NOT NULL);
        CREATE INDEX event_retries_by_key ON event_retries (target, key, id);
        CREATE INDEX event_retries_by_due ON event_retries (next_attempt);
        CREATE TABLE event_ids (floor INTEGER NOT NULL);
        INSERT INTO event_ids SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0);
        INSERT INTO event_retries (id, target, bucket, key, event, created, payload, attempts, next_attempt)
            SELECT id, target, bucket, key, event, created, payload, attempts, next_attempt FROM events;
        DROP TABLE events;
        """

    /// One row per target of `draft`, reporting `record`, in the caller's transaction (of
    /// `write`, which publishes it to `freshEvents` when it commits); `facts` are the draft's,
    /// made already (`CommitRequest.facts`), if it has them.
    func insertEvents(_ draft: EventDraft, facts: [EventFacts]? = nil, for record: BlobRecord, in db: Database) throws {
        let facts = facts ?? draft.facts(for: record, millis: clock.milliseconds)
        let bucket = EventDraft.bucket(of: record.key).map(String.init) ?? ""
        for (target, fact) in zip(draft.targets, facts) {
            let id = freshEvents.takeID()
            try db.cachedStatement(sql: "INSERT INTO event_queue (id, target, bucket, key, event, created, sha256, facts) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
                .execute(arguments: [id, target.target, bucket, Data(record.key.bytes), fact.name, fact.millis, Data(fact.sha256), fact.packed])
            freshEvents.stage(OutboxEvent(id: id, target: target.target, bucket: bucket, key: record.key.bytes,
                                          event: fact.name, message: .facts(fact), created: fact.millis, attempts: 0,
                                          nextAttempt: fact.millis))
        }
    }

    /// When the file opens: the newest id in `event_queue` (`FreshEvents`' floor), and the
    /// largest id either table has had.
    static let eventIDsQuery = """
        SELECT (SELECT COALESCE(MAX(id), 0) FROM event_queue),
               max(floor, (SELECT COALESCE(MAX(id), 0) FROM event_queue), (SELECT COALESCE(MAX(id), 0) FROM event_retries))
        FROM event_ids
        """

    /// The oldest events of each (target, key) that may go now: retries that are due, and then
    /// never-tried events, each only if no earlier event of its (target, key) waits for a retry,
    /// and one per (target, key). `node` and `leaseUntil` hold nothing here (one claimer).
    /// Without retries (as a rule) no key waits, and without rows older than `freshEvents`
    /// the never-tried events are its copy: then the claim reads two EXISTS and no row, and
    /// once they said so, no table at all until a retry or an overflow (`FreshEvents.markClear`).
    public func claimEvents(node: String, now: Int64, leaseUntil: Int64, limit: Int) throws(StoreError) -> [OutboxEvent] {
        // Before the read begins: every row at or below this floor is committed by then.
        let fresh = freshEvents.snapshot()
        if !fresh.clear, let fromTables = try claimFromTables(now: now, limit: limit, fresh: fresh) {
            return fromTables
        }
        // In id order already, as the copy is.
        var claimed: [OutboxEvent] = []
        Self.claimFresh(into: &claimed, limit: limit, from: fresh.events)
        return claimed
    }

    /// The claim read from the tables, or nil when they hold no retry and no row at or below
    /// `fresh.floor` (then marked clear): the claim is the copy's alone.
    private func claimFromTables(now: Int64, limit: Int,
                                 fresh: (floor: Int64, newest: Int64, events: [OutboxEvent], clear: Bool, version: Int))
        throws(StoreError) -> [OutboxEvent]? {
        try run {
            try pool.read { db in
                let row = try Row.fetchOne(db.cachedStatement(sql: Self.waitingQuery), arguments: [fresh.floor])
                let retries: Bool = row?[0] ?? true, older: Bool = row?[1] ?? true
                guard retries || older else {
                    freshEvents.markClear(version: fresh.version)
                    return nil
                }
                var claimed = try retries ? Row.fetchAll(db.cachedStatement(sql: Self.dueQuery), arguments: [now, limit]).map(Self.event(from:)) : []
                try Self.claimFresh(into: &claimed, limit: limit, newest: fresh.newest,
                                    query: retries ? Self.freshQuery : Self.freshQueryWithoutRetries, in: db)
                return claimed.sorted { $0.id < $1.id }
            }
        }
    }

    /// Whether any event waits for a retry, and whether `event_queue` has rows at or below a floor.
    private static let waitingQuery = """
        SELECT EXISTS (SELECT 1 FROM event_retries), EXISTS (SELECT 1 FROM event_queue WHERE id <= ?)
        """

    /// The plan of a claim's two reads, for tests.
    public func eventClaimPlan() throws(StoreError) -> String {
        try run {
            try pool.read { db in
                let due = try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + Self.dueQuery, arguments: [0, 1])
                let fresh = try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + Self.freshQuery, arguments: [0, 1, 1])
                return (due + fresh).map { $0["detail"] as String? ?? "" }.joined(separator: "\n")
            }
        }
    }

    private static let dueQuery = """
        SELECT \(columnNames), attempts, next_attempt FROM event_retries r INDEXED BY event_retries_by_due WHERE r.next_attempt <= ?
        AND NOT EXISTS (SELECT 1 FROM event_retries p WHERE p.target = r.target AND p.key = r.key AND p.id < r.id)
        ORDER BY r.next_attempt LIMIT ?
        """

    /// Never-tried events after an id and up to another (the newest in `freshEvents`: a claim
    /// takes no row committed by a transaction that has not published it yet), with the retry
    /// state they start with.
    private static let freshRows = "SELECT \(columnNames), 0 AS attempts, created AS next_attempt FROM event_queue q WHERE q.id > ? AND q.id <= ?"

    private static let freshQuery = freshRows + """

        AND NOT EXISTS (SELECT 1 FROM event_retries p WHERE p.target = q.target AND p.key = q.key AND p.id < q.id)
        ORDER BY q.id LIMIT ?
        """

    private static let freshQueryWithoutRetries = freshRows + " ORDER BY q.id LIMIT ?"

    /// Adds never-tried events to `claimed` (read by `query`: `freshQuery`, or without retries
    /// `freshQueryWithoutRetries`), one per (target, key), in id order, up to `limit`.
    /// A key written many times in a row fills a window of rows with its events, of which one
    /// goes per claim: the next windows let the keys behind it go meanwhile (4 at most). Rows
    /// are read one at a time, and only those claimed are made into events.
    private static func claimFresh(into claimed: inout [OutboxEvent], limit: Int, newest: Int64, query: String, in db: Database) throws {
        var seen = Set(claimed.map(\.orderKey))
        var after: Int64 = 0
        let window = max(limit, 1) * 4
        for _ in 0..<4 where claimed.count < limit {
            let rows = try Row.fetchCursor(db.cachedStatement(sql: query), arguments: [after, newest, window])
            var read = 0
            while claimed.count < limit, let row = try rows.next() {
                read += 1
                after = row[Column.id]
                if seen.insert(EventKey(target: row[Column.target], key: Array(row[Column.key] as Data))).inserted {
                    claimed.append(event(from: row))
                }
            }
            guard read == window else { return }
        }
    }

    /// Adds never-tried events to `claimed` from `events` (`freshEvents`' copy), as
    /// `claimFresh(into:limit:newest:query:in:)` adds them from the table: as many rows at most.
    private static func claimFresh(into claimed: inout [OutboxEvent], limit: Int, from events: [OutboxEvent]) {
        var seen = Set<EventKey>()
        for index in events.indices.prefix(max(limit, 1) * 16) where claimed.count < limit {
            if seen.insert(events[index].orderKey).inserted {
                claimed.append(events[index])
            }
        }
    }

    /// One statement per run of consecutive ids and table: the events of a round are, as a
    /// rule, one run (ids are handed out in order), which SQLite deletes in one pass.
    public func removeEvents(_ ids: [Int64]) throws(StoreError) {
        guard let newest = ids.max() else { return }
        let runs = Self.runs(of: ids)
        try writeUnsynced { db in
            for table in ["event_queue", "event_retries"] {
                let statement = try db.cachedStatement(sql: "DELETE FROM \(table) WHERE id BETWEEN ? AND ?")
                for run in runs { try statement.execute(arguments: [run.lowerBound, run.upperBound]) }
            }
            try db.cachedStatement(sql: "UPDATE event_ids SET floor = max(floor, ?)").execute(arguments: [newest])
        }
        freshEvents.remove(ids)
    }

    /// `ids` as the fewest ranges that hold every one of them and nothing else.
    static func runs(of ids: [Int64]) -> [ClosedRange<Int64>] {
        var runs: [ClosedRange<Int64>] = []
        for id in ids.sorted() {
            // Sorted: id is at least the last run's end (`&+`: no id follows Int64.max).
            if let last = runs.last, id == last.upperBound || id == last.upperBound &+ 1 {
                runs[runs.count - 1] = last.lowerBound...id
            } else {
                runs.append(id...id)
            }
        }
        return runs
    }

    /// A never-tried event moves to `event_retries`; one there gets its new attempt.
    public func retryEvents(_ retries: [EventRetry]) throws(StoreError) {
        guard !retries.isEmpty else { return }
        try writeUnsynced { db in
            for retry in retries {
                let arguments: StatementArguments = [retry.attempts, retry.nextAttempt, retry.id]
                try db.cachedStatement(sql: """
                    INSERT INTO event_retries (\(Self.columnNames), attempts, next_attempt) SELECT \(Self.columnNames), ?, ? FROM event_queue WHERE id = ?
                    """).execute(arguments: arguments)
                try db.cachedStatement(sql: "DELETE FROM event_queue WHERE id = ?").execute(arguments: [retry.id])
                try db.cachedStatement(sql: "UPDATE event_retries SET attempts = ?, next_attempt = ? WHERE id = ?").execute(arguments: arguments)
            }
        }
        freshEvents.remove(retries.map(\.id), retried: true)
    }

    /// Both tables as one queue, in id order.
    private static let allEvents = """
        (SELECT \(columnNames), 0 AS attempts, created AS next_attempt FROM event_queue
         UNION ALL SELECT \(columnNames), attempts, next_attempt FROM event_retries)
        """

    public func pendingEvents(after: Int64?, limit: Int) throws(StoreError) -> (events: [OutboxEvent], total: Int) {
        try run {
            try pool.read { db in
                let rows = try Row.fetchAll(db, sql: "SELECT \(Self.columnNames), attempts, next_attempt FROM \(Self.allEvents) WHERE id > ? ORDER BY id LIMIT ?",
                                            arguments: [after ?? 0, limit])
                let total = try Int.fetchOne(db, sql: "SELECT (SELECT COUNT(*) FROM event_queue) + (SELECT COUNT(*) FROM event_retries)") ?? 0
                return (rows.map(Self.event(from:)), total)
            }
        }
    }

    public func eventQueueStats() throws(StoreError) -> [String: (count: Int, oldest: Int64)] {
        try run {
            try pool.read { db in
                var stats: [String: (count: Int, oldest: Int64)] = [:]
                let rows = try Row.fetchAll(db, sql: """
                    SELECT target, COUNT(*) AS n, MIN(created) AS oldest
                    FROM (SELECT target, created FROM event_queue UNION ALL SELECT target, created FROM event_retries) GROUP BY target
                    """)
                for row in rows { stats[row["target"]] = (row["n"], row["oldest"]) }
                return stats
            }
        }
    }

    /// The place of each column in every read of events: `columnNames`, then `attempts` and
    /// `next_attempt` (read by position: by name GRDB searches the columns for each value).
    private enum Column {
        static let id = 0, target = 1, bucket = 2, key = 3, event = 4, created = 5, sha256 = 6, facts = 7, payload = 8
        static let attempts = 9, nextAttempt = 10
    }

    /// An event as delivered: its message from the row's facts, rendered when it is sent, or
    /// (moved from the first outbox) its message with the id as sequencer.
    private static func event(from row: Row) -> OutboxEvent {
        let id: Int64 = row[Column.id]
        let message: EventMessage = (row[Column.payload] as String?).map { .rendered(EventJSON.fillingSequencer($0, with: id)) }
            ?? .facts(facts(from: row))
        return OutboxEvent(id: id, target: row[Column.target], bucket: row[Column.bucket], key: Array(row[Column.key] as Data),
                           event: row[Column.event], message: message, created: row[Column.created], attempts: row[Column.attempts],
                           nextAttempt: row[Column.nextAttempt])
    }

    /// The row's facts; a row whose facts cannot be read still goes, with what its columns say.
    private static func facts(from row: Row) -> EventFacts {
        let key = String(decoding: row[Column.key] as Data, as: UTF8.self), sha256 = Array((row[Column.sha256] as Data?) ?? Data())
        let name: String = row[Column.event], millis: Int64 = row[Column.created]
        return EventFacts(packed: row[Column.facts] ?? "", name: name, key: key, sha256: sha256, millis: millis)
            ?? EventFacts(name: name, principal: "", requestID: "", sourceIP: "", dialect: "", node: "", region: "",
                          configurationID: "", key: key, size: 0, eTag: "", sha256: sha256, version: "", versioned: false,
                          millis: millis)
    }
}

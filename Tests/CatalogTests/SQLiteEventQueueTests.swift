import Foundation
import GRDB
import Testing
@testable import BlobStore
@testable import CatalogSQLite

/// The SQLite outbox's own upgrades and restarts (`event_queue`, `event_retries`, `event_ids`).
@Suite struct SQLiteEventQueueTests {
    /// Events pending in the first outbox (one table, AUTOINCREMENT) wait as retries, due when
    /// they were, with their messages and attempts; a new id comes after the largest ever given,
    /// also when that event was delivered and deleted before the upgrade.
    @Test func pendingEventsSurviveTheUpgrade() throws {
        let path = try CatalogRun.newDirectory() + "/index.sqlite"
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        do {
            let pool = try DatabasePool(path: path)
            try SQLiteBlobIndex.migrator.migrate(pool, upTo: "20-version-sweep")
            try pool.write { db in
                for (attempts, next) in [(0, now - 5), (2, now + 60_000), (0, now - 5)] {
                    try db.execute(sql: """
                        INSERT INTO events (target, bucket, key, event, payload, created, attempts, next_attempt)
                        VALUES ('one', 'bkt', ?, 'ObjectCreated:Put', '{"sequencer":"","old":true}', ?, ?, ?)
                        """, arguments: [Data("bkt/k\(attempts)".utf8), now - 10, attempts, next])
                }
                try db.execute(sql: "DELETE FROM events WHERE id = 3")
            }
        }
        let index = try SQLiteBlobIndex(path: path)
        let pending = try index.pendingEvents(after: nil, limit: 10).events
        #expect(pending.map(\.id) == [1, 2] && pending.map(\.attempts) == [0, 2] && pending[1].nextAttempt == now + 60_000)
        #expect(pending[0].payload == #"{"sequencer":"0000000000000001","old":true}"#)
        #expect(try index.claimEvents(node: "n", now: now, leaseUntil: now + 1000, limit: 10).map(\.id) == [1])
        try index.put(try record("bkt/new"), events: draft(targets: ["one"]))
        #expect(try index.pendingEvents(after: 2, limit: 10).events.map(\.id) == [4])
    }

    /// After a restart, the id of the newest event, delivered and deleted, is not given again.
    @Test func idsSurviveARestart() throws {
        let path = try CatalogRun.newDirectory() + "/index.sqlite"
        let now = Int64(Date().timeIntervalSince1970 * 1000) + 1000
        let newest: Int64
        do {
            let index = try SQLiteBlobIndex(path: path)
            try index.put(try record("bkt/a"), events: draft())
            let claimed = try index.claimEvents(node: "n", now: now, leaseUntil: now + 1000, limit: 10)
            try index.removeEvents(claimed.map(\.id))
            newest = try #require(claimed.map(\.id).max())
            #expect(try index.writerSynchronousLevel() == 2, "the writer is back at FULL after an unsynced write")
        }
        let index = try SQLiteBlobIndex(path: path)
        try index.put(try record("bkt/a"), events: draft(targets: ["one"]))
        let next = try index.pendingEvents(after: nil, limit: 10).events
        #expect(next.count == 1 && next[0].id == newest + 1)
    }
}

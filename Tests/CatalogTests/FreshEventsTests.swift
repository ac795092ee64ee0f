import Foundation
import Testing
@testable import BlobStore
@testable import CatalogSQLite

/// SQLite's claims take the events this process wrote from memory (`FreshEvents`), and those
/// of an earlier process, or of an overflow of that memory, from the table: together they keep
/// the outbox's order, one event per (target, key) at a time, oldest first.
@Suite struct FreshEventsTests {
    /// The ids of each round's claim, in order, each event removed once claimed.
    private func rounds(_ index: SQLiteBlobIndex) throws -> [[Int64]] {
        var rounds: [[Int64]] = []
        let now = Int64(Date().timeIntervalSince1970 * 1000) + 1000
        for _ in 0..<10 {
            let claimed = try index.claimEvents(node: "n1", now: now, leaseUntil: now + 5000, limit: 10)
            guard !claimed.isEmpty else { break }
            rounds.append(claimed.map(\.id))
            try index.removeEvents(claimed.map(\.id))
        }
        return rounds
    }

    /// Writes one event (target `one`) per key, in order; their ids.
    private func write(_ keys: [String], to index: SQLiteBlobIndex) throws -> [Int64] {
        let before = try index.pendingEvents(after: nil, limit: 10_000).events.map(\.id)
        for key in keys { try index.put(try record("bkt/" + key), events: draft(targets: ["one"])) }
        return try index.pendingEvents(after: nil, limit: 10_000).events.map(\.id).filter { !before.contains($0) }
    }

    /// Events left by an earlier process go before this one's, and a key's later event waits
    /// for its earlier one across the two.
    @Test func anEarlierProcessesEventsGoFirst() throws {
        let path = try CatalogRun.newDirectory() + "/index.sqlite"
        let old = try write(["a", "b"], to: try SQLiteBlobIndex(path: path))
        let index = try SQLiteBlobIndex(path: path)
        let new = try write(["a", "c"], to: index)
        #expect(try rounds(index) == [[old[0], old[1], new[1]], [new[0]]])
        #expect(try write(["a", "a", "d"], to: index).count == 3)
        let rest = try index.pendingEvents(after: nil, limit: 10).events.map(\.id)
        #expect(try rounds(index) == [[rest[0], rest[2]], [rest[1]]])
    }

    /// Past its capacity the copy in memory is dropped, and the table serves the claims until
    /// the rows it dropped are gone: nothing is skipped, nothing goes twice, a key's order holds.
    @Test func anOverflowFallsBackToTheTable() throws {
        let index = try SQLiteBlobIndex(path: try CatalogRun.newDirectory() + "/index.sqlite", freshEventCapacity: 3)
        let ids = try write(["a", "b", "a", "b", "c"], to: index)
        let more = try write(["a", "d"], to: index)
        #expect(try rounds(index) == [[ids[0], ids[1], ids[4], more[1]], [ids[2], ids[3]], [more[0]]])
        let last = try write(["a", "a"], to: index)
        #expect(try rounds(index) == [[last[0]], [last[1]]])
        #expect(try index.pendingEvents(after: nil, limit: 10).total == 0)
    }

    /// Once a claim found no retry and no older row, claims read no table; an overflow after
    /// that drops the copy, and its rows are read from the table again.
    @Test func anOverflowAfterAClearClaimReadsTheTable() throws {
        let index = try SQLiteBlobIndex(path: try CatalogRun.newDirectory() + "/index.sqlite", freshEventCapacity: 3)
        #expect(try rounds(index).isEmpty)
        let ids = try write(["a", "b"], to: index)
        #expect(try rounds(index) == [ids])
        let more = try write(["a", "b", "c", "d"], to: index)
        #expect(try rounds(index) == [more])
        #expect(try index.pendingEvents(after: nil, limit: 10).total == 0)
    }

    /// Delivered ids are deleted by runs of consecutive ids: each run holds only ids delivered.
    @Test func deliveredIdsGoByRuns() {
        #expect(SQLiteBlobIndex.runs(of: []) == [])
        #expect(SQLiteBlobIndex.runs(of: [7, 3, 5, 4, 9, 10, 4, 1]) == [1...1, 3...5, 7...7, 9...10])
        #expect(SQLiteBlobIndex.runs(of: [.max, .max - 1, .max, 1]) == [1...1, (.max - 1)...(.max)])
    }

    /// A transaction that rolls back leaves no event in memory either, and a retried event
    /// leaves it: its key's later events wait for the retry, read from the table.
    @Test func rollbacksAndRetriesLeaveTheCopy() throws {
        let index = try SQLiteBlobIndex(path: try CatalogRun.newDirectory() + "/index.sqlite")
        let refusal = try Backend.sqlite.refuseWrites(index, try BlobKey("refused"))
        #expect(throws: refusal) {
            try index.commit([CommitRequest(try record("bkt/x"), when: .createOnly, events: draft(targets: ["one"])),
                              CommitRequest(try record("refused"), when: .createOnly, events: draft(targets: ["one"]))])
        }
        let now = Int64(Date().timeIntervalSince1970 * 1000) + 1000
        #expect(try index.claimEvents(node: "n1", now: now, leaseUntil: now + 5000, limit: 10).isEmpty)
        let ids = try write(["a", "a", "b"], to: index)
        let first = try index.claimEvents(node: "n1", now: now, leaseUntil: now + 5000, limit: 10)
        #expect(first.map(\.id) == [ids[0], ids[2]])
        try index.retryEvent(ids[0], attempts: 1, nextAttempt: now + 60_000)
        try index.removeEvent(ids[2])
        #expect(try index.claimEvents(node: "n1", now: now, leaseUntil: now + 5000, limit: 10).isEmpty)
        let due = try index.claimEvents(node: "n1", now: now + 60_000, leaseUntil: now + 65_000, limit: 10)
        #expect(due.map(\.id) == [ids[0]] && due[0].attempts == 1)
        try index.removeEvent(ids[0])
        #expect(try rounds(index) == [[ids[1]]])
    }
}

import Foundation
import Synchronization
import Testing
@testable import BlobStore
@testable import CatalogPostgres
@testable import CatalogSQLite

/// A draft for two targets, as the HTTP layer makes one when two subscriptions match.
func draft(_ name: String = "ObjectCreated:Put", targets: [String] = ["one", "two"]) -> EventDraft {
    EventDraft(name: name, targets: targets.map { EventTarget(target: $0, configurationID: "c-" + $0) }, principal: "key:k1",
               requestID: "REQ", sourceIP: "127.0.0.1", dialect: "v1", node: "n1")
}

extension CatalogConformance {
    /// The event outbox (DESIGN.md §6): rows written in the transaction of the change they
    /// report, claimed oldest first per (target, key) with leases, retried and removed.
    @Suite struct EventOutboxes {
        /// A commit writes one row per target, with the record's payload and the row's id as
        /// sequencer; a commit whose condition fails, and one without a draft, write none.
        @Test(arguments: Backend.all)
        func commitWritesItsEvents(_ backend: Backend) throws {
            let index = try backend.open()
            let stored = try record("bkt/a b")
            #expect(try index.commit(CommitRequest(stored, when: .createOnly, events: draft())) == .created)
            #expect(throws: StoreError.preconditionFailed) {
                try index.commit(CommitRequest(try record("bkt/a b"), when: .createOnly, events: draft()))
            }
            try index.put(try record("bkt/quiet"))
            let (events, total) = try index.pendingEvents(after: nil, limit: 10)
            #expect(total == 2)
            #expect(events.map(\.target) == ["one", "two"])
            for event in events {
                #expect(event.bucket == "bkt" && event.key == Array("bkt/a b".utf8) && event.event == "ObjectCreated:Put")
                #expect(event.attempts == 0 && event.nextAttempt == event.created)
                #expect(event.payload.contains("\"sequencer\":\"\(EventJSON.sequencer(event.id))\""))
                #expect(event.payload.contains("\"key\":\"a+b\",\"size\":3") && event.payload.contains("\"configurationId\":\"c-\(event.target)\""))
            }
            #expect(events[0].id < events[1].id)
        }

        /// The message read back is the one the change's facts make, whatever their text holds.
        @Test(arguments: Backend.all)
        func messagesComeBackExactly(_ backend: Backend) throws {
            let index = try backend.open()
            var events = draft(targets: ["one"])
            events.principal = "key:\"q\"\\ü\u{1}"
            events.sourceIP = "::1"
            var stored = try record("bkt/ü x+y", size: 1 << 40)
            stored.versioned = true
            stored.md5 = Array(repeating: 0xAB, count: 16)
            stored.parts = 3
            try index.put(stored, events: events)
            let event = try #require(try index.pendingEvents(after: nil, limit: 1).events.first)
            #expect(event.payload == events.payload(for: stored, target: events.targets[0], sequencer: event.id, millis: event.created))
            #expect(event.payload.contains(#""eTag":"abababababababababababababababab-3""#) && event.payload.contains("\"size\":1099511627776"))
        }

        /// A removal writes its event only when something was removed.
        @Test(arguments: Backend.all)
        func removalWritesItsEventWhenItRemoves(_ backend: Backend) throws {
            let index = try backend.open()
            #expect(throws: StoreError.notFound) { try index.remove(try BlobKey("bkt/k"), if: .always, events: draft("ObjectRemoved:Delete")) }
            #expect(try index.pendingEvents(after: nil, limit: 10).total == 0)
            let stored = try record("bkt/k")
            try index.put(stored)
            #expect(try index.remove(stored.key, if: .always, events: draft("ObjectRemoved:Delete", targets: ["one"])) == stored)
            let events = try index.pendingEvents(after: nil, limit: 10).events
            #expect(events.count == 1 && events[0].event == "ObjectRemoved:Delete" && !events[0].payload.contains("\"size\""))
        }

        /// A batch the catalog refuses stores no event either.
        @Test(arguments: Backend.all)
        func refusedBatchStoresNoEvent(_ backend: Backend) throws {
            let index = try backend.open()
            let refusal = try backend.refuseWrites(index, try BlobKey("refused"))
            #expect(throws: refusal) {
                try index.commit([CommitRequest(try record("bkt/fresh"), when: .createOnly, events: draft()),
                                  CommitRequest(try record("refused"), when: .createOnly, events: draft())])
            }
            #expect(try index.pendingEvents(after: nil, limit: 10).total == 0)
        }

        /// Only the oldest event of each (target, key) is claimed, and what a claim hands out
        /// comes back until it is removed or released; a retry waits for its next attempt, and
        /// the later events of its key wait behind it (released with or without an attempt)
        /// while other keys go.
        @Test(arguments: Backend.all)
        func claimsTheOldestOfEachKey(_ backend: Backend) throws {
            let index = try backend.open()
            for key in ["bkt/a", "bkt/a", "bkt/b", "bkt/c"] { try index.put(try record(key), events: draft(targets: ["one"])) }
            let now = Int64(Date().timeIntervalSince1970 * 1000) + 1000
            func claim(_ at: Int64) throws -> [OutboxEvent] { try index.claimEvents(node: "n1", now: at, leaseUntil: at + 5000, limit: 10) }
            let first = try claim(now)
            #expect(first.map(\.keyText) == ["bkt/a", "bkt/b", "bkt/c"])
            #expect(try claim(now).map(\.id) == first.map(\.id), "a restart of the node takes them again")
            try index.removeEvents([first[0].id])
            try index.retryEvent(first[1].id, attempts: 3, nextAttempt: now + 60_000)
            // Released without an attempt (its round ran out of time): it still goes first.
            try index.retryEvent(first[2].id, attempts: 0, nextAttempt: now + 30_000)
            for key in ["bkt/b", "bkt/c"] { try index.put(try record(key), events: draft(targets: ["one"])) }
            let next = try claim(now + 10_000)
            #expect(next.map(\.keyText) == ["bkt/a"] && next[0].id > first[0].id)
            try index.removeEvents(next.map(\.id))
            #expect(try claim(now + 10_000).isEmpty)
            let released = try claim(now + 30_000)
            #expect(released.map(\.id) == [first[2].id] && released[0].attempts == 0)
            try index.removeEvents([first[2].id])
            let retried = try claim(now + 60_000)
            #expect(retried.map(\.keyText) == ["bkt/b", "bkt/c"] && retried[0].id == first[1].id && retried[0].attempts == 3)
            #expect(retried[1].id > first[2].id)
            #expect(try index.eventQueueStats()["one"]?.count == 3)
        }

        /// A key written many times in a row does not hold back the keys written after it.
        @Test(arguments: Backend.all)
        func aBusyKeyLetsOthersGo(_ backend: Backend) throws {
            let index = try backend.open()
            for key in Array(repeating: "bkt/busy", count: 20) + ["bkt/other"] { try index.put(try record(key), events: draft(targets: ["one"])) }
            let now = Int64(Date().timeIntervalSince1970 * 1000) + 1000
            let claimed = try index.claimEvents(node: "n1", now: now, leaseUntil: now + 5000, limit: 2)
            #expect(claimed.map(\.keyText) == ["bkt/busy", "bkt/other"])
        }

        /// An event's id never comes back, even after the newest events are removed.
        @Test(arguments: Backend.all)
        func idsAreNeverReused(_ backend: Backend) throws {
            let index = try backend.open()
            try index.put(try record("bkt/a"), events: draft())
            let now = Int64(Date().timeIntervalSince1970 * 1000) + 1000
            let first = try index.claimEvents(node: "n1", now: now, leaseUntil: now + 5000, limit: 10)
            try index.retryEvent(first[1].id, attempts: 1, nextAttempt: now)
            try index.removeEvents(first.map(\.id))
            #expect(try index.pendingEvents(after: nil, limit: 10).total == 0)
            try index.put(try record("bkt/a"), events: draft(targets: ["one"]))
            let next = try index.pendingEvents(after: nil, limit: 10).events
            #expect(next.count == 1 && next[0].id > first[1].id)
            #expect(next[0].payload.contains("\"sequencer\":\"\(EventJSON.sequencer(next[0].id))\""))
        }

        /// A claim finds what is due by an index, not by reading every pending event: a dead
        /// webhook's backlog, all waiting for retries, costs an empty round a probe.
        @Test(arguments: Backend.all)
        func claimsReadTheDueIndex(_ backend: Backend) throws {
            let index = try backend.open()
            let plan: String
            if let sqlite = backendIndex(index) as? SQLiteBlobIndex {
                plan = try sqlite.eventClaimPlan()
                #expect(plan.contains("event_retries_by_due") && plan.contains("event_retries_by_key"), "\(plan)")
            } else if let postgres = backendIndex(index) as? PostgresBlobIndex {
                plan = try postgres.eventClaimPlan()
                #expect(plan.contains("events_by_due") && plan.contains("events_by_target_key"), "\(plan)")
            } else {
                throw TestFailure("unknown backend")
            }
        }

        /// A node's lease keeps its events from the other nodes until it runs out.
        @Test(arguments: Backend.shared)
        func leasesHoldAcrossNodes(_ backend: Backend) throws {
            let index = try backend.open()
            for key in ["bkt/a", "bkt/b"] { try index.put(try record(key), events: draft(targets: ["one"])) }
            let now = Int64(Date().timeIntervalSince1970 * 1000) + 1000
            let first = try index.claimEvents(node: "n1", now: now, leaseUntil: now + 5000, limit: 10)
            #expect(first.count == 2)
            #expect(try index.claimEvents(node: "n2", now: now, leaseUntil: now + 5000, limit: 10).isEmpty)
            #expect(try index.claimEvents(node: "n1", now: now, leaseUntil: now + 5000, limit: 10).map(\.id) == first.map(\.id))
            #expect(try index.claimEvents(node: "n2", now: now + 6000, leaseUntil: now + 9000, limit: 10).map(\.id) == first.map(\.id))
        }

        /// Nodes claiming at once never hold the same event (PostgreSQL: FOR UPDATE SKIP LOCKED).
        @Test(arguments: Backend.shared)
        func nodesNeverShareAnEvent(_ backend: Backend) throws {
            let open = try #require(backend.openNodes)
            let nodes = try open(3)
            for i in 0..<60 { try nodes[0].put(try record("bkt/k\(i)"), events: draft(targets: ["one"])) }
            let now = Int64(Date().timeIntervalSince1970 * 1000) + 1000
            let claimed = Mutex<[Int64]>([])
            // Each node claims once (a node takes its own leases again, as after a restart).
            DispatchQueue.concurrentPerform(iterations: 3) { n in
                let events: [OutboxEvent]
                do {
                    events = try nodes[n].claimEvents(node: "n\(n)", now: now, leaseUntil: now + 60_000, limit: 20)
                } catch {
                    Issue.record("claim: \(error)")
                    events = []
                }
                claimed.withLock { $0 += events.map(\.id) }
            }
            let ids = claimed.withLock { $0 }
            #expect(ids.count == 60 && Set(ids).count == 60, "claimed \(ids.count), \(Set(ids).count) distinct")
        }
    }
}

extension OutboxEvent {
    /// The key, as text.
    var keyText: String { String(decoding: key, as: UTF8.self) }
}

extension BlobIndex {
    /// Commits unconditionally with events.
    @discardableResult
    func put(_ record: BlobRecord, events: EventDraft) throws(StoreError) -> IndexCommit {
        try commit(CommitRequest(record, when: .unconditional, events: events))
    }
}

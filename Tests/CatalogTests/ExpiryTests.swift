import Foundation
import Synchronization
import Testing
@testable import BlobStore
@testable import CatalogPostgres
@testable import CatalogSQLite

extension CatalogConformance {
    /// The expiry columns (`ttl_expires`, `expires_at`), the sweep's batches through the index on
    /// the deadline, and stamps: the same on every backend.
    @Suite struct Expiry {
        /// A record at `key` due at `deadline` (nil: never).
        static func due(_ key: String, _ deadline: Int64?, ttl: Int64? = nil) throws -> BlobRecord {
            var stored = try record(key)
            stored.expiresAt = deadline
            stored.ttlExpires = ttl
            return stored
        }

        /// Both deadlines round-trip; a batch takes the earliest due rows first, at most `limit`,
        /// deletes them (their versions become garbage) and leaves the rest.
        @Test(arguments: Backend.all)
        func sweepRemovesDueRowsInBatches(_ backend: Backend) throws {
            let index = try backend.open()
            let early = try Self.due("b/early", 1_000, ttl: 1_000), middle = try Self.due("b/middle", 2_000)
            let late = try Self.due("b/late", 3_000), future = try Self.due("b/future", 9_000), never = try Self.due("b/never", nil)
            for stored in [late, future, never, middle, early] { try index.put(stored) }
            #expect(try index.record(for: early.key) == early)
            #expect(try index.record(for: never.key)?.expiresAt == nil)
            let first = try index.removeExpired(now: 5_000, limit: 2) { $0.expiresAt }
            #expect(first.removed == [early, middle] && first.examined == 2 && !first.skipped)
            #expect(Set(try index.garbage()) == [early.version, middle.version])
            let second = try index.removeExpired(now: 5_000, limit: 2) { $0.expiresAt }
            #expect(second.removed == [late] && second.examined == 1)
            let third = try index.removeExpired(now: 5_000, limit: 2) { $0.expiresAt }
            #expect(third.removed.isEmpty && third.examined == 0)
            #expect(try index.allKeys(prefix: Array("b/".utf8), pageSize: 10).map(\.rawValue) == ["b/future", "b/never"])
        }

        /// The sweep writes the event drafted for each blob it deletes in its own transaction, and
        /// none for a row it only stamps again.
        @Test(arguments: Backend.all)
        func sweepWritesTheEventsOfWhatItDeletes(_ backend: Backend) throws {
            let index = try backend.open()
            let gone = try Self.due("bkt/gone", 1_000), kept = try Self.due("bkt/kept", 1_000)
            for stored in [gone, kept] { try index.put(stored) }
            let sweep = try index.removeExpired(now: 5_000, limit: 10, deadline: { $0.key == kept.key ? 9_000 : $0.expiresAt },
                                                events: { _ in draft(LifecycleExpirationEvent.name.replacingOccurrences(of: "s3:", with: ""),
                                                                     targets: ["one"]) })
            #expect(sweep.removed == [gone])
            let events = try index.pendingEvents(after: nil, limit: 10).events
            #expect(events.count == 1 && events[0].key == Array("bkt/gone".utf8) && events[0].event == "LifecycleExpiration:Delete")
        }

        /// A row found due that the rules in force no longer expire is stamped with the deadline
        /// they give (or none), not deleted; `stampExpiry` changes a row only at its version.
        @Test(arguments: Backend.all)
        func rowsNoLongerDueAreStampedAgain(_ backend: Backend) throws {
            let index = try backend.open()
            let later = try Self.due("s/later", 1_000), cleared = try Self.due("s/cleared", 1_000)
            try index.put(later)
            try index.put(cleared)
            let sweep = try index.removeExpired(now: 5_000, limit: 10) { $0.key == later.key ? 8_000 : nil }
            #expect(sweep.removed.isEmpty && sweep.examined == 2)
            #expect(try index.record(for: later.key)?.expiresAt == 8_000)
            #expect(try index.record(for: cleared.key)?.expiresAt == nil)
            try index.stampExpiry([ExpiryStamp(key: later.key, version: later.version, expiresAt: 4_000),
                                   ExpiryStamp(key: cleared.key, version: newVersion(), expiresAt: 4_000)])
            #expect(try index.record(for: later.key)?.expiresAt == 4_000)
            #expect(try index.record(for: cleared.key)?.expiresAt == nil)
            #expect(try index.removeExpired(now: 5_000, limit: 10) { $0.expiresAt }.removed.map(\.key) == [later.key])
        }

        /// A write's condition sees a row past its stamped deadline as absent (it is, to every
        /// reader): create-only stores over it; a row not yet due still refuses.
        @Test(arguments: Backend.all)
        func conditionsSeeDueRowsAsAbsent(_ backend: Backend) throws {
            let index = try backend.open()
            let now = Int64(Date().timeIntervalSince1970)
            try index.put(try Self.due("c/due", now - 1))
            try index.put(try Self.due("c/later", now + 3_600))
            let replacing = try record("c/due")
            guard case .replaced = try index.commit(replacing, when: .createOnly) else { throw TestFailure("not stored") }
            #expect(try index.record(for: replacing.key) == replacing)
            #expect(throws: StoreError.preconditionFailed) { try index.commit(try record("c/later"), when: .createOnly) }
            #expect(throws: StoreError.preconditionFailed) { try index.commit(try record("c/due"), when: .createOnly) }
        }

        /// The sweep's selection reads the index on the deadline (`blobs_by_expiry`), so its
        /// cost follows the rows due, not the rows stored.
        @Test(arguments: Backend.all)
        func sweepReadsTheDeadlineIndex(_ backend: Backend) throws {
            let index = try backend.open()
            for n in 0..<50 { try index.put(try Self.due("p/\(n)", n % 10 == 0 ? 1_000 : nil)) }
            let plan: String
            if let sqlite = backendIndex(index) as? SQLiteBlobIndex {
                plan = try sqlite.expirySweepPlan()
            } else if let postgres = backendIndex(index) as? PostgresBlobIndex {
                plan = try postgres.expirySweepPlan()
            } else {
                throw TestFailure("unknown backend")
            }
            #expect(plan.contains("blobs_by_expiry"), "\(plan)")
        }

        /// Two nodes sweeping one shared catalog at once: every due row is deleted exactly once,
        /// and neither fails (one node sweeps at a time; the other's batch is skipped).
        @Test(arguments: Backend.shared)
        func twoNodesSweepOnce(_ backend: Backend) throws {
            guard let openNodes = backend.openNodes else { return }
            let nodes = try openNodes(2)
            let due = try (0..<120).map { try Self.due("n/\($0)", 1_000) }
            for stored in due { try nodes[0].put(stored) }
            let outcomes = concurrently(2) { node -> Result<[String], StoreError> in
                var removed: [String] = []
                do throws(StoreError) {
                    for _ in 0..<200 {
                        let sweep = try nodes[node].removeExpired(now: 5_000, limit: 10) { $0.expiresAt }
                        removed += sweep.removed.map(\.key.rawValue)
                        if !sweep.skipped && sweep.examined == 0 { break }
                    }
                    return .success(removed)
                } catch {
                    return .failure(error)
                }
            }
            let removed = try outcomes.flatMap { try $0.get() }
            #expect(removed.count == due.count && Set(removed) == Set(due.map(\.key.rawValue)))
            #expect(try nodes[1].totals().count == 0)
        }
    }
}

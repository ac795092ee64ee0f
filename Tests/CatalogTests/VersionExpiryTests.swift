import Foundation
import Testing
@testable import BlobStore
@testable import CatalogPostgres
@testable import CatalogSQLite

extension CatalogConformance {
    /// Lifecycle rules over versions (issue 25): a version made noncurrent under a rule's
    /// NoncurrentDays is stamped by the commit or delete that makes it noncurrent, and the sweep
    /// finds it through `blob_versions_by_sweep`; a delete marker left as its key's only version
    /// is stamped at once; a version under Object Lock is never removed; a rules change stamps a
    /// bucket's versions in pages. Every backend.
    @Suite struct VersionExpiry {
        typealias Versions = CatalogConformance.Versions

        static var now: Int64 { Int64(Date().timeIntervalSince1970) }

        /// Versioning enabled, with the rules' NoncurrentDays.
        static func enabled(noncurrentDays: Int64?) -> WriteCondition {
            var condition = Versions.versioning(.enabled)
            condition.noncurrentDays = noncurrentDays
            return condition
        }

        /// The deadline the store gives (`BlobStore.deadline(of:rules:now:)`) under one rule of
        /// one day and ExpiredObjectDeleteMarker.
        static func deadline(_ now: Int64) -> (DueVersion) -> Int64? {
            let rules = LifecycleRules(["b": [LifecycleRule(id: "r", noncurrentDays: 1, expiredObjectDeleteMarker: true)]])
            return { BlobStore.deadline(of: $0, rules: rules, now: now) }
        }

        static func sweep(_ index: any Catalog, at now: Int64, limit: Int = 100) throws -> VersionExpirySweep {
            try index.removeExpiredVersions(now: now, limit: limit, deadline: deadline(now),
                                            events: { _ in draft(NoncurrentExpirationEvent.name, targets: ["one"]) })
        }

        /// Noncurrent versions are due a day (rounded up to midnight) after they stopped being
        /// current and not before; a locked one stays; a version made noncurrent without a rule
        /// is never found. Each removal has its event, naming the version; its file is garbage.
        @Test(arguments: Backend.all)
        func noncurrentVersionsExpire(_ backend: Backend) throws {
            let index = try backend.open()
            let rule = Self.enabled(noncurrentDays: 1)
            let stored = try (0..<3).map { _ in try Versions.commit(index, try record("b/k"), .enabled, if: rule) }
            var held = try record("b/held")
            held.lock = ObjectLock(mode: .compliance, retainUntil: Self.now + 30 * 86_400, legalHold: false)
            try Versions.commit(index, held, .enabled, if: rule)
            try Versions.commit(index, try record("b/held"), .enabled, if: rule)
            let unruled = try Versions.commit(index, try record("b/free"), .enabled)
            try Versions.commit(index, try record("b/free"), .enabled)
            #expect(try Self.sweep(index, at: Self.now).examined == 0, "nothing due before the day is out")
            let later = Self.now + 3 * 86_400
            let sweep = try Self.sweep(index, at: later)
            #expect(sweep.examined == 3 && Set(sweep.removed.map(\.id)) == [stored[0].version, stored[1].version])
            #expect(Set(sweep.garbage) == [stored[0].version, stored[1].version])
            #expect(try Set(index.garbage()) == Set(sweep.garbage))
            #expect(try Versions.listed(index, "b/k").map(\.0) == [stored[2].version])
            #expect(try index.version(held.key, id: held.version) != nil, "a locked version stays")
            #expect(try index.version(unruled.key, id: unruled.version) != nil, "no rule, no stamp")
            let events = try index.pendingEvents(after: nil, limit: 10).events
            #expect(events.map(\.event) == ["LifecycleExpiration:Delete", "LifecycleExpiration:Delete"])
            #expect(Set(events.compactMap { event in stored.first { event.payload.contains("\"versionId\":\"\($0.version)\"") }?.version })
                    == [stored[0].version, stored[1].version])
            // The locked one is looked at again only when its retention ends.
            #expect(try Self.sweep(index, at: later + 86_400).examined == 0)
            #expect(try Self.sweep(index, at: Self.now + 31 * 86_400).removed.map(\.id) == [held.version])
        }

        /// A delete marker: removed once it is its key's only version (the sweep that removes
        /// the last version stamps it), never while older versions remain, even when every row
        /// is due; a marker a later write goes over is a noncurrent version like any.
        @Test(arguments: Backend.all)
        func expiredDeleteMarkers(_ backend: Backend) throws {
            let index = try backend.open()
            let rule = Self.enabled(noncurrentDays: 1)
            let old = try Versions.commit(index, try record("b/m"), .enabled, if: rule)
            let marker = try #require(try index.deleteMarking(old.key, marker: Versions.marker(old.key), if: rule).marker)
            var held = try record("b/held")
            held.lock.legalHold = true
            try Versions.commit(index, held, .enabled)
            _ = try index.deleteMarking(held.key, marker: Versions.marker(held.key), if: Self.enabled(noncurrentDays: nil))
            let later = Self.now + 3 * 86_400
            #expect(try Self.sweep(index, at: later).removed.map(\.id) == [old.version])
            #expect(try Self.sweep(index, at: later).removed.map(\.id) == [marker.id], "the marker left alone goes next")
            #expect(try Versions.listed(index, "b/m").isEmpty)
            // Every row of the bucket due: the held version stays, and so does the marker over it.
            #expect(try index.reviewVersions(prefix: Array("b/".utf8), after: nil, limit: 100, at: later) == nil)
            let swept = try Self.sweep(index, at: later)
            #expect(swept.examined == 2 && swept.removed.isEmpty)
            #expect(try Versions.listed(index, "b/held").map(\.1) == [true, false])
            // A write over a lone marker makes it noncurrent: due by the rule, as a version.
            let lone = try record("b/w")
            let over = try #require(try index.deleteMarking(lone.key, marker: Versions.marker(lone.key),
                                                            if: Self.enabled(noncurrentDays: nil)).marker)
            try Versions.commit(index, lone, .enabled, if: rule)
            let third = try Self.sweep(index, at: later)
            #expect(third.removed.map(\.id) == [over.id] && third.removed.first?.deleteMarker == true)
            #expect(try Versions.listed(index, "b/w").map(\.0) == [lone.version])
        }

        /// Removing versions by id leaves a lone marker stamped; a suspended delete over the
        /// `null` version alone leaves one too.
        @Test(arguments: Backend.all)
        func removalsLeavingAMarkerAloneStampIt(_ backend: Backend) throws {
            let index = try backend.open()
            let only = try Versions.commit(index, try record("b/r"), .enabled)
            let marker = try index.deleteMarking(only.key, marker: Versions.marker(only.key), if: Versions.versioning(.enabled)).marker
            _ = try index.removeVersion(only.key, id: only.version, if: .always)
            let suspended = try Versions.commit(index, try record("b/s"), .suspended)
            let null = try index.deleteMarking(suspended.key, marker: Versions.marker(suspended.key, versioned: false),
                                               if: Versions.versioning(.suspended)).marker
            let sweep = try Self.sweep(index, at: Self.now + 1)
            #expect(sweep.removed.count == 2 && Set(sweep.removed.map(\.id)) == Set([marker?.id, null?.id].compactMap { $0 }))
            #expect(sweep.garbage.isEmpty)
        }

        /// A rules change stamps every noncurrent row of the bucket's keys, page by page, and
        /// none of another bucket.
        @Test(arguments: Backend.all)
        func reviewStampsOneBucketInPages(_ backend: Backend) throws {
            let index = try backend.open()
            for key in ["b/a", "b/b", "c/a"] {
                for _ in 0..<3 { try Versions.commit(index, try record(key), .enabled) }
            }
            let at = Self.now
            var cursor: VersionRowCursor?
            var pages = 0
            repeat {
                cursor = try index.reviewVersions(prefix: Array("b/".utf8), after: cursor, limit: 3, at: at)
                pages += 1
            } while cursor != nil && pages < 10
            #expect(pages == 2, "4 rows in pages of 3")
            let sweep = try index.removeExpiredVersions(now: at, limit: 100, deadline: { _ in nil }, events: { _ in nil })
            #expect(sweep.examined == 4 && sweep.removed.isEmpty)
            #expect(try index.removeExpiredVersions(now: at, limit: 100, deadline: { _ in nil }, events: { _ in nil }).examined == 0)
        }

        /// The sweep's selection reads `blob_versions_by_sweep`: its cost follows the rows due.
        @Test(arguments: Backend.all)
        func sweepReadsTheIndex(_ backend: Backend) throws {
            let index = try backend.open()
            let plan: String
            if let sqlite = backendIndex(index) as? SQLiteBlobIndex {
                plan = try sqlite.versionSweepPlan()
            } else if let postgres = backendIndex(index) as? PostgresBlobIndex {
                plan = try postgres.versionSweepPlan()
            } else {
                throw TestFailure("unknown backend")
            }
            #expect(plan.contains("blob_versions_by_sweep"), "\(plan)")
        }
    }
}

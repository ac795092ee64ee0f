import Foundation
import Testing
@testable import BlobStore
@testable import CatalogPostgres
@testable import CatalogSQLite

extension CatalogConformance {
    /// Versions (S3 versioning, issue 25): commits that keep the record they replace, delete
    /// markers, removal of one version with the newest remaining promoted, the suspended `null`
    /// version, listings paged by (key, version) cursors, and a first-schema catalog whose
    /// blobs become `null` versions. Every backend.
    @Suite struct Versions {
        /// Commits `record` in a bucket whose versioning is `mode` (as the store does: the
        /// record has an id when enabled); returns what was stored.
        @discardableResult
        static func commit(_ index: any Catalog, _ record: BlobRecord, _ mode: BucketVersioning,
                           if condition: WriteCondition = .always) throws -> BlobRecord {
            var record = record, condition = condition
            record.versioned = mode == .enabled
            condition.versioning = mode
            _ = try index.commit(CommitRequest(record, if: condition))
            return record
        }

        static func marker(_ key: BlobKey, versioned: Bool = true) -> BlobRecord {
            BlobRecord.deleteMarker(key, id: newVersion(), versioned: versioned, modified: 1_700_000_100)
        }

        static func versioning(_ mode: BucketVersioning, _ base: WriteCondition = .always) -> WriteCondition {
            var condition = base
            condition.versioning = mode
            return condition
        }

        /// What `versions` lists of `key`: (id, delete marker, latest), newest first.
        static func listed(_ index: any Catalog, _ key: String) throws -> [(String, Bool, Bool)] {
            try index.versions(prefix: Array(key.utf8), after: nil, limit: 100).map { ($0.id, $0.deleteMarker, $0.latest) }
        }

        /// Enabled: every replaced record is kept (no garbage, every file still named), newest
        /// first, each readable by its id; an unversioned commit still makes garbage.
        @Test(arguments: Backend.all)
        func enabledKeepsEveryVersion(_ backend: Backend) throws {
            let index = try backend.open()
            let stored = try (0..<3).map { size in try Self.commit(index, try record("v/k", size: UInt64(size)), .enabled) }
            #expect(try index.record(for: stored[2].key) == stored[2])
            #expect(try Self.listed(index, "v/k").map(\.0) == stored.reversed().map(\.version))
            #expect(try Self.listed(index, "v/k").map(\.2) == [true, false, false])
            #expect(try index.garbage().isEmpty)
            for version in stored {
                #expect(try index.version(version.key, id: version.version)?.record == version)
                #expect(try index.containsVersion(version.version))
            }
            #expect(try index.allVersions() == Set(stored.map(\.version)))
            #expect(try index.version(stored[0].key, id: "null") == nil)
            #expect(try index.totals().count == 1, "totals count current records")
            let plain = try record("u/k"), replaced = try record("u/k")
            try index.put(plain)
            try index.put(replaced)
            #expect(try index.garbage() == [plain.version], "unversioned commits are as before")
        }

        /// A delete leaves a marker as the latest version (no current record); removing the
        /// marker brings the newest version back; removing the current version promotes the
        /// next one and makes its file garbage.
        @Test(arguments: Backend.all)
        func deleteMarkersAndPromotion(_ backend: Backend) throws {
            let index = try backend.open()
            let first = try Self.commit(index, try record("d/k", size: 1), .enabled)
            let second = try Self.commit(index, try record("d/k", size: 2), .enabled)
            let marker = Self.marker(first.key)
            let removal = try index.deleteMarking(first.key, marker: marker, if: Self.versioning(.enabled))
            #expect(removal.removed?.record == second)
            #expect(removal.marker?.id == marker.version && removal.garbage.isEmpty)
            #expect(try index.record(for: first.key) == nil)
            #expect(try index.newestNoncurrent(first.key)?.deleteMarker == true)
            #expect(try Self.listed(index, "d/k").map { "\($0.0 == marker.version ? "m" : $0.0 == second.version ? "2" : "1")\($0.2)" }
                    == ["mtrue", "2false", "1false"])
            // A second delete makes a second marker, even without a current record.
            let again = Self.marker(first.key)
            _ = try index.deleteMarking(first.key, marker: again, if: Self.versioning(.enabled))
            #expect(try index.removeVersion(first.key, id: again.version, if: .always).removed?.deleteMarker == true)
            #expect(try index.record(for: first.key) == nil, "the older marker is the latest now")
            _ = try index.removeVersion(first.key, id: marker.version, if: .always)
            #expect(try index.record(for: first.key) == second, "the newest version is current again")
            let gone = try index.removeVersion(first.key, id: second.version, if: .always)
            #expect(gone.removed?.record == second && gone.removed?.latest == true && gone.garbage == [second.version])
            #expect(try index.record(for: first.key) == first)
            #expect(try Self.listed(index, "d/k").map(\.0) == [first.version])
            #expect(try index.garbage() == [second.version])
            #expect(throws: StoreError.notFound) { try index.removeVersion(first.key, id: second.version, if: .always) }
            #expect(throws: StoreError.notFound) { try index.removeVersion(first.key, id: "null", if: .always) }
        }

        /// Conditions on deletes and version removals are decided inside the transaction.
        @Test(arguments: Backend.all)
        func conditionsOnVersions(_ backend: Backend) throws {
            let index = try backend.open()
            let first = try Self.commit(index, try record("c/k", size: 1), .enabled)
            let second = try Self.commit(index, try record("c/k", size: 2), .enabled)
            #expect(throws: StoreError.preconditionFailed) {
                try index.removeVersion(first.key, id: first.version, if: WriteCondition(ifSize: 2))
            }
            #expect(try index.removeVersion(first.key, id: first.version, if: WriteCondition(ifSize: 1)).removed?.record == first)
            #expect(throws: StoreError.preconditionFailed) {
                try index.deleteMarking(first.key, marker: Self.marker(first.key), if: Self.versioning(.enabled, WriteCondition(ifSize: 3)))
            }
            #expect(try index.record(for: first.key) == second)
            _ = try index.deleteMarking(first.key, marker: Self.marker(first.key), if: Self.versioning(.enabled, WriteCondition(ifSize: 2)))
            #expect(throws: StoreError.notFound) {
                try index.deleteMarking(first.key, marker: Self.marker(first.key), if: Self.versioning(.enabled, WriteCondition(ifSize: 2)))
            }
        }

        /// Suspended: writes and deletes make the `null` version, replacing the key's `null`
        /// version (current or not, its file garbage) and keeping the versions with ids.
        @Test(arguments: Backend.all)
        func suspendedWritesTheNullVersion(_ backend: Backend) throws {
            let index = try backend.open()
            let plain = try record("s/k", size: 1)
            try index.put(plain)
            let enabled = try Self.commit(index, try record("s/k", size: 2), .enabled)
            #expect(try Self.listed(index, "s/k").map(\.0) == [enabled.version, "null"])
            let suspended = try Self.commit(index, try record("s/k", size: 3), .suspended)
            #expect(try Self.listed(index, "s/k").map(\.0) == ["null", enabled.version])
            #expect(try index.garbage() == [plain.version], "the old null version went")
            let replaced = try Self.commit(index, try record("s/k", size: 4), .suspended)
            #expect(Set(try index.garbage()) == [plain.version, suspended.version])
            #expect(try index.version(replaced.key, id: "null")?.record == replaced)
            let removal = try index.deleteMarking(replaced.key, marker: Self.marker(replaced.key, versioned: false),
                                                  if: Self.versioning(.suspended))
            #expect(removal.garbage == [replaced.version])
            #expect(try Self.listed(index, "s/k").map { "\($0.0 == "null" ? "null" : "id")\($0.1)" } == ["nulltrue", "idfalse"])
            #expect(try index.record(for: replaced.key) == nil)
        }

        /// Listings go key by key in bytewise order, newest first, and pages that resume after
        /// each (key, version id) add up to the whole listing, for every page size.
        @Test(arguments: Backend.all)
        func listingPages(_ backend: Backend) throws {
            let index = try backend.open()
            for (key, count) in [("l/a", 3), ("l/b", 1), ("l/c", 2), ("m/x", 2)] {
                for size in 0..<count { try Self.commit(index, try record(key, size: UInt64(size)), .enabled) }
            }
            _ = try index.deleteMarking(try BlobKey("l/b"), marker: Self.marker(try BlobKey("l/b")), if: Self.versioning(.enabled))
            let whole = try index.versions(prefix: Array("l/".utf8), after: nil, limit: 100)
            #expect(whole.map(\.record.key.rawValue) == ["l/a", "l/a", "l/a", "l/b", "l/b", "l/c", "l/c"])
            #expect(whole.map(\.latest) == [true, false, false, true, false, true, false])
            #expect(whole.map(\.deleteMarker) == [false, false, false, true, false, false, false])
            for size in 1...8 {
                var pages: [BlobVersion] = [], cursor: VersionCursor?
                while true {
                    let page = try index.versions(prefix: Array("l/".utf8), after: cursor, limit: size)
                    pages += page
                    guard page.count == size, let last = page.last else { break }
                    cursor = VersionCursor(key: last.record.key.bytes, versionID: last.id)
                }
                #expect(pages == whole, "pages of \(size)")
            }
            let afterKey = try index.versions(prefix: Array("l/".utf8), after: VersionCursor(key: Array("l/a".utf8)), limit: 100)
            #expect(afterKey == Array(whole.dropFirst(3)))
        }

        /// A catalog made by the first schema migrates: its blobs are `null` versions, listed
        /// as the latest, and no row is rewritten.
        @Test(arguments: Backend.all)
        func firstSchemaBlobsAreNullVersions(_ backend: Backend) throws {
            let (index, old) = try backend.openFirstSchema()
            for record in old.records {
                #expect(try index.record(for: record.key)?.versionID == "null")
                #expect(try index.version(record.key, id: "null")?.record == record)
            }
            let listed = try index.versions(prefix: [], after: nil, limit: 100)
            #expect(listed.map(\.id) == old.records.map { _ in "null" })
            #expect(listed.allSatisfy { $0.latest })
            let next = try Self.commit(index, try record(old.records[0].key.rawValue), .enabled)
            #expect(try Self.listed(index, old.records[0].key.rawValue).map(\.0) == [next.version, "null"])
        }
    }
}

import Foundation
import Testing
@testable import BlobStore
@testable import CatalogPostgres
@testable import CatalogSQLite

extension CatalogConformance {
    /// Versions with events and expiry (the merge of issue 25 with events and lifecycle): a
    /// versioned delete writes its event in its own transaction, payloads name version ids, and
    /// the sweep deletes a versioned bucket's due record as a DELETE there does. Every backend.
    @Suite struct VersionEvents {
        /// The events of the outbox, oldest first: (name, payload).
        static func events(_ index: any Catalog) throws -> [(String, String)] {
            try index.pendingEvents(after: nil, limit: 100).events.map { ($0.event, $0.payload) }
        }

        /// A versioned commit's event names its version id; a delete marker gets
        /// ObjectRemoved:DeleteMarkerCreated naming the marker, a removed version
        /// ObjectRemoved:Delete naming it; a delete whose condition fails writes nothing.
        @Test(arguments: Backend.all)
        func versionedChangesWriteTheirEvents(_ backend: Backend) throws {
            let index = try backend.open()
            var first = try record("bkt/k")
            first.versioned = true
            _ = try index.commit(CommitRequest(first, if: Versions.versioning(.enabled), events: draft(targets: ["one"])))
            let marker = Versions.marker(first.key)
            #expect(throws: StoreError.preconditionFailed) {
                try index.deleteMarking(first.key, marker: marker, if: Versions.versioning(.enabled, WriteCondition(ifSize: 99)),
                                        events: draft("ObjectRemoved:DeleteMarkerCreated", targets: ["one"]))
            }
            #expect(try Self.events(index).count == 1)
            _ = try index.deleteMarking(first.key, marker: marker, if: Versions.versioning(.enabled),
                                        events: draft("ObjectRemoved:DeleteMarkerCreated", targets: ["one"]))
            _ = try index.removeVersion(first.key, id: first.version, if: .always, events: draft("ObjectRemoved:Delete", targets: ["one"]))
            let events = try Self.events(index)
            #expect(events.map(\.0) == ["ObjectCreated:Put", "ObjectRemoved:DeleteMarkerCreated", "ObjectRemoved:Delete"])
            #expect(events[0].1.contains("\"size\":3,\"eTag\":\"") && events[0].1.contains("\"versionId\":\"\(first.version)\""))
            #expect(events[1].1.contains("\"object\":{\"key\":\"k\",\"versionId\":\"\(marker.version)\",\"sequencer\""))
            #expect(events[2].1.contains("\"object\":{\"key\":\"k\",\"versionId\":\"\(first.version)\",\"sequencer\""))
            // An unversioned record's payload names no version id.
            _ = try index.commit(CommitRequest(try record("bkt/plain"), if: .always, events: draft(targets: ["one"])))
            #expect(try Self.events(index).last?.1.contains("versionId") == false)
        }

        /// The sweep in an enabled bucket keeps the due record as a noncurrent version (its file
        /// is no garbage) and makes a delete marker the latest, with the marker's event; in a
        /// suspended bucket the `null` version goes; an unversioned bucket's row goes as before.
        @Test(arguments: Backend.all)
        func sweepDeletesAVersionedRecordAsADeleteDoes(_ backend: Backend) throws {
            let index = try backend.open()
            var kept = try CatalogConformance.Expiry.due("on/k", 1_000), dropped = try CatalogConformance.Expiry.due("off/k", 1_000)
            kept = try Versions.commit(index, kept, .enabled)
            dropped = try Versions.commit(index, dropped, .suspended)
            let plain = try CatalogConformance.Expiry.due("plain/k", 1_000)
            try index.put(plain)
            let markers = [kept.key: Versions.marker(kept.key), dropped.key: Versions.marker(dropped.key, versioned: false)]
            let sweep = try index.removeExpired(now: 5_000, limit: 10, deadline: { $0.expiresAt }, versioned: { record in
                markers[record.key].map { ExpiryDeletion(versioning: $0.versioned ? .enabled : .suspended, marker: $0) }
            }, events: { record in
                draft(markers[record.key] == nil ? "LifecycleExpiration:Delete" : "LifecycleExpiration:DeleteMarkerCreated", targets: ["one"])
            })
            #expect(Set(sweep.removed.map(\.key)) == [kept.key, dropped.key, plain.key])
            #expect(Set(sweep.garbage) == [dropped.version, plain.version])
            #expect(Set(try index.garbage()) == [dropped.version, plain.version])
            #expect(try index.record(for: kept.key) == nil && index.record(for: dropped.key) == nil)
            #expect(try Versions.listed(index, "on/k").map { [$0.0, "\($0.1)", "\($0.2)"] }
                    == [[markers[kept.key]?.version ?? "", "true", "true"], [kept.version, "false", "false"]])
            #expect(try Versions.listed(index, "off/k").map { [$0.0, "\($0.1)", "\($0.2)"] } == [["null", "true", "true"]])
            #expect(try index.version(kept.key, id: kept.version)?.record == kept)
            let events = try Self.events(index)
            #expect(events.map(\.0).sorted() == ["LifecycleExpiration:Delete", "LifecycleExpiration:DeleteMarkerCreated",
                                                 "LifecycleExpiration:DeleteMarkerCreated"])
            #expect(events.contains { $0.1.contains("\"versionId\":\"\(markers[kept.key]?.version ?? "")\"") })
            // Nothing is due any more: the marker and the kept version are no rows of the sweep.
            #expect(try index.removeExpired(now: 9_000, limit: 10) { $0.expiresAt }.examined == 0)
        }
    }
}

import BucketSettings
import Foundation
import Testing
@testable import BlobStore
@testable import CatalogPostgres
@testable import CatalogSQLite

extension CatalogConformance {
    /// `blobd migrate-index`'s path from one backend to the other: what a single node's SQLite
    /// index exports, PostgreSQL imports with every field and owner.
    @Suite
    struct Import {
        /// Every tus upload (finished or not) and every unfinished multipart upload with its parts
        /// reads back from PostgreSQL as SQLite held it; the owners came along, so that the
        /// moved uploads count toward --max-open-uploads; importing again changes nothing.
        @Test func uploadsKeepEveryFieldAndTheirOwners() throws {
            let source = try SQLiteBlobIndex(path: try CatalogRun.newDirectory() + "/index.sqlite")
            let finished = try fullUpload(), open = try tusUpload(), ownerless = try tusUpload()
            try source.insert(finished, owner: "alice", limit: 0)
            try source.insert(open, owner: "alice", limit: 0)
            try source.insert(ownerless, owner: nil, limit: 0)
            var multipart = try fullMultipart()
            multipart.completedETag = nil
            try source.insertMultipart(multipart, owner: "bob", limit: 0)
            let parts = [UploadedPart(number: 1, size: 5 << 20, md5: Array(repeating: 1, count: 16), modified: 7, checksum: "AQ=="),
                         UploadedPart(number: 4, size: 1, md5: Array(repeating: 4, count: 16), modified: 8)]
            for part in parts { _ = try source.savePart(part, of: multipart.id) }
            let completed = try multipartUpload("b/done")
            try source.insertMultipart(completed, owner: "bob", limit: 0)
            try source.markCompleted(completed.id, etag: "\"e\"", checksum: nil)

            let uploads = try source.exportUploads()
            #expect(Dictionary(uniqueKeysWithValues: uploads.map { ($0.upload.id, $0.owner) })
                    == [finished.id: "alice", open.id: "alice", ownerless.id: nil])
            let unfinished = try source.exportMultipart()
            #expect(unfinished.count == 1)
            #expect(unfinished.first?.upload == multipart && unfinished.first?.owner == "bob" && unfinished.first?.parts == parts)

            let target = try PostgresBlobIndex(url: try TestPostgres.running().freshURL(), connections: 4)
            for _ in 0..<2 {
                #expect(try target.importBatch(records: [], uploads: uploads, multipart: unfinished) == 0)
                for upload in [finished, open, ownerless] { #expect(try target.upload(upload.id) == upload) }
                #expect(try target.multipart(multipart.id) == multipart)
                #expect(try target.parts(of: multipart.id) == parts)
                #expect(try target.multipart(completed.id) == nil)
            }
            #expect(throws: StoreError.tooManyUploads(limit: 1)) { try target.insert(try tusUpload(), owner: "alice", limit: 1) }
            #expect(throws: StoreError.tooManyUploads(limit: 1)) { try target.insertMultipart(try multipartUpload("b/x"), owner: "bob", limit: 1) }
            try target.insert(try tusUpload(), owner: "carol", limit: 1)
        }

        /// Noncurrent versions and delete markers (in order, with their locks), bucket settings
        /// and pending events read back from PostgreSQL as SQLite held them; importing again
        /// (a migration run again) adds nothing twice, and new events get later ids.
        @Test func versionsSettingsAndEventsImportOnce() throws {
            let source = try SQLiteBlobIndex(path: try CatalogRun.newDirectory() + "/index.sqlite")
            _ = try source.createBucket(Bucket(name: "v", created: 1))
            try source.setBucketAccess("v", .versioning, to: "Enabled")
            try source.setBucketAccess("v", .objectLock, to: ObjectLockConfiguration(defaultMode: .compliance, days: 1).stored)
            let stored = try (0..<3).map { size in try Versions.commit(source, try record("v/k", size: UInt64(size)), .enabled) }
            let until = Int64(time(nil)) + 86_400
            _ = try source.setLock(stored[0].key, id: stored[0].version, retention: ObjectLock(mode: .compliance, retainUntil: until),
                                   legalHold: nil, bypassGovernance: false)
            _ = try source.setLock(stored[1].key, id: stored[1].version, retention: nil, legalHold: true, bypassGovernance: false)
            _ = try source.deleteMarking(stored[0].key, marker: Versions.marker(stored[0].key), if: Versions.versioning(.enabled),
                                         events: draft("ObjectRemoved:DeleteMarkerCreated"))
            try Versions.commit(source, try record("v/other"), .enabled)
            let expected = try source.versions(prefix: [], after: nil, limit: 100)
            #expect(expected.filter { !$0.latest }.count == 3 && expected.count == 5)
            #expect(expected.first { $0.id == stored[0].version }?.record.lock == ObjectLock(mode: .compliance, retainUntil: until))
            #expect(expected.first { $0.id == stored[1].version }?.record.lock.legalHold == true)

            let target = try PostgresBlobIndex(url: try TestPostgres.running().freshURL(), connections: 4)
            _ = try target.createBucket(Bucket(name: "v", created: 1))
            let exported = try source.exportVersions(after: 0, limit: 2)
            let rest = try source.exportVersions(after: try #require(exported.last), limit: 100)
            #expect(exported.versions.count == 2 && rest.versions.count == 2 && rest.versions.last?.deleteMarker == true)
            #expect(try source.exportVersions(after: try #require(rest.last), limit: 100).last == nil)
            let events = try source.pendingEvents(after: nil, limit: 100).events
            for round in 0..<2 {
                #expect(try target.importBatch(records: try source.list(prefix: [], after: nil, limit: 100)) == (round == 0 ? 1 : 0))
                #expect(try target.importVersions(exported.versions) + target.importVersions(rest.versions) == (round == 0 ? 4 : 0))
                #expect(try target.importSettings(try source.bucketAccess()) == (round == 0 ? 2 : 0))
                #expect(try target.importEvents(events) == (round == 0 ? 2 : 0))
                #expect(try target.versions(prefix: [], after: nil, limit: 100) == expected)
                #expect(Set(try target.bucketAccess()) == Set(try source.bucketAccess()))
                #expect(try target.pendingEvents(after: nil, limit: 100).events == events)
            }
            #expect(throws: StoreError.objectLocked) { try target.removeVersion(stored[0].key, id: stored[0].version, if: .always) }
            #expect(throws: StoreError.objectLocked) { try target.removeVersion(stored[1].key, id: stored[1].version, if: .always) }
            #expect(try target.removeVersion(stored[2].key, id: stored[2].version, if: .always).removed?.record == stored[2])
            try target.put(try record("v/new"), events: draft(targets: ["one"]))
            let ids = try target.pendingEvents(after: nil, limit: 100).events.map(\.id)
            #expect(ids.count == 3 && ids[2] > ids[1], "a new event sorts after the moved ones: \(ids)")
        }

        /// Keys (made at run time, expired, or by a bootstrap file), share links with their
        /// download counts, the anonymous grants and the versions waiting to be reclaimed read
        /// back from PostgreSQL as SQLite held them; a revoked key and its links stay gone; a row
        /// the database had already is kept as it was there; importing again adds nothing, and
        /// the bootstrap file applied again at start updates its key in place.
        @Test func keysSharesAnonymousGrantsAndGarbageImportOnce() throws {
            let source = try SQLiteBlobIndex(path: try CatalogRun.newDirectory() + "/index.sqlite")
            let ci = try Access.key("ci", grants: "write:artifacts", source: .bootstrap)
            let plan = BootstrapPlan(buckets: [Bucket(name: "artifacts", created: 7)], keys: [ci],
                                     anonymous: try Grants(parsing: "read:artifacts/public/*"))
            try source.applyBootstrap(plan)
            let keys = try ["app", "gone", "late", "old"].map { name in
                try Access.key(name, grants: "read:photos,share:photos", expires: name == "late" ? 1 : nil)
            }
            for key in keys { try source.insertKey(key) }
            let shares = [ShareRecord(id: "s-app", creator: "key:k-app", target: Array("photos/a".utf8), isPrefix: false, allow: .read,
                                      created: 5, expires: 9_999_999_999, maxDownloads: 3, downloads: 2),
                          ShareRecord(id: "s-gone", creator: "key:k-gone", target: Array("photos/".utf8), isPrefix: true, allow: .upload,
                                      created: 6),
                          ShareRecord(id: "s-token", creator: "token:ab", target: [0x62, 0x2F, 0xFF], isPrefix: true, allow: .read,
                                      created: 7, downloads: 4)]
            for share in shares { try source.insertShare(share) }
            try source.revokeKey("k-gone")
            try source.pool.write { db in for version in ["g1", "g2"] { try SQLiteBlobIndex.addGarbage(version, in: db) } }

            let exported = try source.exportKeys(after: "", limit: 2)
            let rest = try source.exportKeys(after: try #require(exported.last), limit: 100)
            #expect(exported.keys == [keys[0], ci] && rest.keys == [keys[2], keys[3]])
            #expect(try source.exportKeys(after: try #require(rest.last), limit: 100).last == nil)
            let links = try source.exportShares(after: "", limit: 100)
            #expect(links.shares == [shares[0], shares[2]])
            #expect(try source.exportAccessSettings().map(\.name) == ["anonymous"])

            let target = try PostgresBlobIndex(url: try TestPostgres.running().freshURL(), connections: 4)
            // Already in the database: a share link with its own count, and a key holding the
            // access key id of one being moved (which the database keeps).
            var counted = shares[2]
            counted.downloads = 5
            try target.insertShare(counted)
            var taken = try Access.key("other")
            taken.accessKeyID = "AKOLD"
            try target.insertKey(taken)
            for round in 0..<2 {
                let version = try target.accessVersion()
                #expect(try target.importKeys(exported.keys) + target.importKeys(rest.keys) == (round == 0 ? 3 : 0))
                #expect(try target.importShares(links.shares) == (round == 0 ? 1 : 0))
                #expect(try target.importAccessSettings(try source.exportAccessSettings()) == (round == 0 ? 1 : 0))
                #expect(try target.importGarbage(try source.garbage()) == (round == 0 ? 2 : 0))
                #expect(try (target.accessVersion() > version) == (round == 0), "running nodes load the new keys")
                #expect(try target.keys() == [keys[0], ci, keys[2], taken], "the database's own key keeps its access key id")
                #expect(try target.share("s-app") == shares[0])
                #expect(try target.share("s-token") == counted, "the database's count is kept")
                #expect(try target.share("s-gone") == nil)
                #expect(try target.anonymousGrants() == plan.anonymous)
                #expect(Set(try target.garbage()) == ["g1", "g2"])
                #expect(try target.isGarbage("g1"))
            }
            #expect(try target.countDownload("s-app"))
            #expect(try !target.countDownload("s-app"), "3 downloads at most, 2 made before")
            try target.applyBootstrap(plan)
            #expect(try target.keys().filter { $0.source == .bootstrap } == [ci], "the bootstrap key is updated in place")
        }
    }
}

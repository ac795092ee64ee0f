import BucketSettings
import Foundation
import Synchronization
import Testing
@testable import BlobStore
@testable import CatalogPostgres
@testable import CatalogSQLite

extension CatalogConformance {
    /// Keys made at run time, bootstrap plans, share links (`AccessIndex`).
    @Suite struct Access {
        static func key(_ name: String, grants: String = "read:photos", created: Int64 = 100, expires: Int64? = nil,
                        source: KeyRecord.Source = .api) throws -> KeyRecord {
            KeyRecord(id: "k-" + name, name: name, grants: try Grants(parsing: grants), tokenHash: Array(name.utf8) + [0, 1, 2],
                      accessKeyID: "AK" + name.uppercased(), secretAccessKey: "secret/" + name, created: created, expires: expires,
                      source: source)
        }

        /// Keys round-trip every field; every change makes the version larger; conflicts on id,
        /// token and access key id are refused with their kind; revocation removes the key and
        /// its share links.
        @Test(arguments: Backend.all)
        func keysRoundTripAndBumpTheVersion(_ backend: Backend) throws {
            let index = try backend.open()
            let start = try index.accessVersion()
            let alpha = try Self.key("alpha", grants: "read:photos,create:drop/in/*,admin", expires: 5_000)
            let beta = try Self.key("beta", created: 200)
            try index.insertKey(alpha)
            try index.insertKey(beta)
            #expect(try index.keys() == [alpha, beta])
            let afterInserts = try index.accessVersion()
            #expect(afterInserts > start)
            var sameID = try Self.key("gamma")
            sameID.id = alpha.id
            #expect(throws: StoreError.keyConflict("id")) { try index.insertKey(sameID) }
            var sameToken = try Self.key("gamma")
            sameToken.tokenHash = beta.tokenHash
            #expect(throws: StoreError.keyConflict("token")) { try index.insertKey(sameToken) }
            var sameAccessKey = try Self.key("gamma")
            sameAccessKey.accessKeyID = beta.accessKeyID
            #expect(throws: StoreError.keyConflict("access key id")) { try index.insertKey(sameAccessKey) }
            #expect(try index.accessVersion() == afterInserts, "a refused insert changes nothing")
            let regranted = try index.replaceGrants(ofKey: beta.id, with: try Grants(parsing: "write:photos/tmp/*"))
            #expect(regranted.grants == (try Grants(parsing: "write:photos/tmp/*")) && regranted.tokenHash == beta.tokenHash)
            #expect(throws: StoreError.keyNotFound) { try index.replaceGrants(ofKey: "k-none", with: .none) }
            let share = ShareRecord(id: "s1", creator: "key:" + alpha.id, target: Array("photos/a".utf8), isPrefix: false,
                                    allow: .read, created: 1)
            try index.insertShare(share)
            try index.revokeKey(alpha.id)
            #expect(try index.keys() == [regranted])
            #expect(try index.share("s1") == nil, "a revoked key's share links go with it")
            #expect(throws: StoreError.keyNotFound) { try index.revokeKey(alpha.id) }
            #expect(try index.accessVersion() > afterInserts)
        }

        /// A bootstrap plan creates buckets, keys and anonymous grants in one transaction;
        /// applying it again changes nothing; a key taking another key's token is refused and
        /// nothing of the plan is applied.
        @Test(arguments: Backend.all)
        func bootstrapIsIdempotentAndAtomic(_ backend: Backend) throws {
            let index = try backend.open()
            let ci = try Self.key("ci", grants: "write:artifacts", source: .bootstrap)
            let plan = BootstrapPlan(buckets: [Bucket(name: "artifacts", created: 7)], keys: [ci],
                                     anonymous: try Grants(parsing: "read:artifacts/public/*"))
            try index.applyBootstrap(plan)
            try index.applyBootstrap(plan)
            #expect(try index.keys() == [ci])
            #expect(try index.buckets().map(\.name) == ["artifacts"])
            #expect(try index.anonymousGrants() == plan.anonymous)
            var changed = plan
            changed.keys[0].grants = try Grants(parsing: "read:artifacts")
            try index.applyBootstrap(changed)
            #expect(try index.keys() == changed.keys, "a bootstrap key follows its file")
            let api = try Self.key("api")
            try index.insertKey(api)
            var clash = try Self.key("clash", source: .bootstrap)
            clash.tokenHash = api.tokenHash
            let bad = BootstrapPlan(buckets: [Bucket(name: "never", created: 8)], keys: [clash], anonymous: .none)
            #expect(throws: StoreError.self) { try index.applyBootstrap(bad) }
            #expect(try index.buckets().map(\.name) == ["artifacts"], "nothing of a refused plan")
            #expect(try index.anonymousGrants() == plan.anonymous)
        }

        /// A bootstrap plan sets the bucket settings it names, in its transaction, and leaves the
        /// others as they are; the access version moves so every node reads them.
        @Test(arguments: Backend.all)
        func bootstrapSetsBucketSettings(_ backend: Backend) throws {
            let index = try backend.open()
            try index.applyBootstrap(BootstrapPlan(buckets: [Bucket(name: "logs", created: 1)], keys: [], anonymous: .none))
            try index.setBucketAccess("logs", .acl, to: "public-read")
            let before = try index.accessVersion()
            let cors = BucketAccessSetting(bucket: "logs", name: .cors, value: #"{"rules":[]}"#)
            let lifecycle = BucketAccessSetting(bucket: "logs", name: .lifecycle, value: #"{"rules":[{"id":"30d"}]}"#)
            let plan = BootstrapPlan(buckets: [Bucket(name: "logs", created: 1)], keys: [], anonymous: .none, settings: [cors, lifecycle])
            try index.applyBootstrap(plan)
            try index.applyBootstrap(plan)
            #expect(try index.bucketAccess(of: "logs").map(\.name.stored) == ["acl", "cors", "lifecycle"])
            #expect(try index.bucketAccess(of: "logs").first { $0.name == .lifecycle }?.value == lifecycle.value)
            #expect(try index.accessVersion() > before)
            var changed = plan
            changed.settings = [BucketAccessSetting(bucket: "logs", name: .cors, value: #"{"rules":[{"id":"x"}]}"#)]
            try index.applyBootstrap(changed)
            #expect(try index.bucketAccess(of: "logs").first { $0.name == .cors }?.value == changed.settings[0].value)
            #expect(BucketAccessSetting.Name(stored: "notifications") == .notifications)
        }

        /// Share links round-trip; downloads count up to their maximum, atomically, also when
        /// many are counted at once; removal is by id.
        @Test(arguments: Backend.all)
        func shareLinksCountTheirDownloads(_ backend: Backend) throws {
            let index = try backend.open()
            let share = ShareRecord(id: "s-\u{E9}", creator: "token:ab", target: [0x62, 0x2F, 0xFF], isPrefix: true, allow: .upload,
                                    created: 3, expires: 9, maxDownloads: 5)
            try index.insertShare(share)
            #expect(try index.share(share.id) == share)
            #expect(try index.shares(createdBy: "token:ab") == [share])
            #expect(try index.shares(createdBy: "token:cd").isEmpty)
            let counted = Mutex(0)
            DispatchQueue.concurrentPerform(iterations: 12) { _ in
                if (try? index.countDownload(share.id)) == true { counted.withLock { $0 += 1 } }
            }
            #expect(counted.withLock { $0 } == 5)
            #expect(try index.share(share.id)?.downloads == 5)
            #expect(try index.countDownload("none") == false)
            try index.removeShare(share.id)
            #expect(throws: StoreError.shareNotFound) { try index.removeShare(share.id) }
        }
    }
}

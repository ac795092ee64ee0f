import BucketSettings
import Foundation
import Testing
@testable import BlobStore
@testable import CatalogPostgres
@testable import CatalogSQLite

extension CatalogConformance {
    /// The buckets' access settings (canned ACLs and policies, `AccessIndex.setBucketAccess`).
    @Suite struct BucketAccess {
        /// A bucket is made with its first settings in one transaction (CreateBucket with Object
        /// Lock, a bootstrap file, PUT /v1/buckets): the settings and a bumped access version
        /// come with it; a second creation of the name changes nothing.
        @Test(arguments: Backend.all)
        func aBucketComesWithItsSettings(_ backend: Backend) throws {
            let index = try backend.open()
            let start = try index.accessVersion()
            let settings = [BucketAccessSetting(bucket: "vault", name: .versioning, value: "Enabled"),
                            BucketAccessSetting(bucket: "vault", name: .objectLock, value: "{}")]
            #expect(try index.createBucket(Bucket(name: "vault", created: 1), settings: settings))
            #expect(try index.bucketAccess(of: "vault").sorted { $0.name.stored < $1.name.stored }
                    == settings.sorted { $0.name.stored < $1.name.stored })
            let made = try index.accessVersion()
            #expect(made > start)
            #expect(try !index.createBucket(Bucket(name: "vault", created: 2),
                                            settings: [BucketAccessSetting(bucket: "vault", name: .acl, value: "public-read")]))
            #expect(try index.bucketAccess(of: "vault").count == 2)
            #expect(try index.bucket("vault")?.created == 1)
            #expect(try index.accessVersion() == made)
        }

        /// Settings round-trip by bucket and name, replace and remove; each change bumps the
        /// access version; a missing bucket is refused and changes nothing.
        @Test(arguments: Backend.all)
        func settingsRoundTripAndBumpTheVersion(_ backend: Backend) throws {
            let index = try backend.open()
            #expect(try index.createBucket(Bucket(name: "photos", created: 1)))
            #expect(try index.createBucket(Bucket(name: "docs", created: 2)))
            let start = try index.accessVersion()
            let policy = #"{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/pub/*"}]}"#
            try index.setBucketAccess("photos", .acl, to: "public-read")
            let afterOne = try index.accessVersion()
            #expect(afterOne > start)
            try index.setBucketAccess("photos", .policy, to: policy)
            try index.setBucketAccess("photos", .objectACL("dir/a b.jpg"), to: "authenticated-read")
            try index.setBucketAccess("docs", .acl, to: "authenticated-read")
            let expected = [
                BucketAccessSetting(bucket: "docs", name: .acl, value: "authenticated-read"),
                BucketAccessSetting(bucket: "photos", name: .acl, value: "public-read"),
                BucketAccessSetting(bucket: "photos", name: .objectACL("dir/a b.jpg"), value: "authenticated-read"),
                BucketAccessSetting(bucket: "photos", name: .policy, value: policy),
            ]
            #expect(try index.bucketAccess() == expected)
            #expect(try index.bucketAccess(of: "photos") == Array(expected.dropFirst()))
            try index.setBucketAccess("photos", .acl, to: "public-read-write")
            #expect(try index.bucketAccess(of: "photos").first == BucketAccessSetting(bucket: "photos", name: .acl, value: "public-read-write"))
            let beforeRemoval = try index.accessVersion()
            try index.setBucketAccess("photos", .policy, to: nil)
            #expect(try index.accessVersion() > beforeRemoval)
            #expect(try index.bucketAccess(of: "photos").map(\.name) == [.acl, .objectACL("dir/a b.jpg")])
            let beforeRefusal = try index.accessVersion()
            #expect(throws: StoreError.bucketNotFound) { try index.setBucketAccess("nobucket", .acl, to: "public-read") }
            #expect(try index.accessVersion() == beforeRefusal, "a refused setting changes nothing")
            #expect(try index.bucketAccess(of: "nobucket").isEmpty)
        }

        /// Removing a bucket drops its settings (and bumps the version), not another bucket's;
        /// a bucket made again under the same name starts private.
        @Test(arguments: Backend.all)
        func removingABucketDropsItsSettings(_ backend: Backend) throws {
            let index = try backend.open()
            #expect(try index.createBucket(Bucket(name: "photos", created: 1)))
            #expect(try index.createBucket(Bucket(name: "photos2", created: 1)))
            try index.setBucketAccess("photos", .acl, to: "public-read")
            try index.setBucketAccess("photos", .objectACL("a"), to: "public-read")
            try index.setBucketAccess("photos2", .acl, to: "public-read")
            let before = try index.accessVersion()
            try index.removeBucket("photos")
            #expect(try index.accessVersion() > before)
            #expect(try index.bucketAccess() == [BucketAccessSetting(bucket: "photos2", name: .acl, value: "public-read")])
            #expect(try index.createBucket(Bucket(name: "photos", created: 3)))
            #expect(try index.bucketAccess(of: "photos").isEmpty)
            let unchanged = try index.accessVersion()
            try index.removeBucket("photos")
            #expect(try index.accessVersion() == unchanged, "a bucket without settings leaves the version")
        }

        /// A setting made through one node is read by every other node of a shared catalog,
        /// with the version they poll moved.
        @Test(arguments: Backend.shared)
        func settingsAreSharedByEveryNode(_ backend: Backend) throws {
            let open = try #require(backend.openNodes)
            let nodes = try open(2)
            #expect(try nodes[0].createBucket(Bucket(name: "photos", created: 1)))
            let before = try nodes[1].accessVersion()
            try nodes[0].setBucketAccess("photos", .acl, to: "public-read")
            #expect(try nodes[1].accessVersion() > before)
            #expect(try nodes[1].bucketAccess() == [BucketAccessSetting(bucket: "photos", name: .acl, value: "public-read")])
        }
    }
}

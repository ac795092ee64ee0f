import Foundation
import Testing
@testable import BlobStore

/// The buckets' settings service: the one write path (a catalog transaction, then this node's
/// table read again), and the table every commit of every dialect asks.
@Suite struct BucketSettingsServiceTests {
    /// Every write asks the table, so it must answer any number of times (a closure kept in a
    /// Mutex used to be wrapped in another thunk per read, until a few thousand writes overflowed
    /// the stack).
    @Test func aChangeIsInForceAtOnceAndAnswersAnyNumberOfTimes() throws {
        let dir = TempDirectory()
        let store = try BlobStore(directory: dir.path)
        let key = try BlobKey("versioned/a/b")
        #expect(store.versioning(of: key) == .unversioned, "no bucket: unversioned")
        #expect(try store.settings.create(Bucket(name: "versioned", created: 1)))
        #expect(try !store.settings.create(Bucket(name: "versioned", created: 2)), "a second creation changes nothing")
        #expect(try store.settings.create(Bucket(name: "paused", created: 1)))
        try store.settings.set("versioned", .versioning, to: "Enabled")
        try store.settings.set("paused", .versioning, to: "Suspended")
        for _ in 0..<200_000 { #expect(store.versioning(of: key) == .enabled) }
        #expect(store.versioning(of: try BlobKey("paused/k")) == .suspended)
        #expect(store.versioning(of: try BlobKey("versioned")) == .enabled, "a key without a slash is its own bucket")
        #expect(store.versioning(of: try BlobKey("other/versioned")) == .unversioned)
        #expect(try store.settings.stored("paused", .versioning) == "Suspended")
        #expect(throws: StoreError.bucketNotFound) { try store.settings.set("missing", .cors, to: nil) }
    }

    /// A bucket made with its settings has them in one step; removing it removes them.
    @Test func createWithSettingsThenRemove() throws {
        let dir = TempDirectory()
        let store = try BlobStore(directory: dir.path)
        let lock = ObjectLockConfiguration(defaultMode: .governance, days: 3)
        #expect(try store.settings.create(Bucket(name: "vault", created: 1), with: BucketAccessSetting.objectLock("vault", lock)))
        #expect(store.versioning(of: try BlobKey("vault/k")) == .enabled)
        #expect(store.objectLock(of: try BlobKey("vault/k")) == lock)
        try store.settings.remove("vault")
        #expect(store.objectLock(of: try BlobKey("vault/k")) == nil)
        #expect(store.versioning(of: try BlobKey("vault/k")) == .unversioned)
    }

    /// Lifecycle rules set through the service are in force at once, and the bucket's blobs are
    /// restamped with their deadlines (in the background) without another call.
    @Test func lifecycleChangeRestamps() throws {
        let dir = TempDirectory()
        let store = try BlobStore(directory: dir.path)
        #expect(try store.settings.create(Bucket(name: "logs", created: 1)))
        let record = try store.put(Array("old".utf8), as: "logs/a").record
        #expect(record.expiresAt == nil)
        let rules = #"{"rules":[{"id":"r","status":"Enabled","prefix":"","expiration_days":1}]}"#
        try store.settings.set("logs", .lifecycle, to: rules)
        #expect(store.lifecycleRules.deadline(of: record) != nil, "in force on this node when set returns")
        let deadline = ContinuousClock.now + .seconds(10)
        while try store.record(for: record.key)?.expiresAt == nil, ContinuousClock.now < deadline {
            try Task.checkCancellation()
            usleep(10_000)
        }
        #expect(try store.record(for: record.key)?.expiresAt == store.lifecycleRules.deadline(of: record))
    }

    /// The table read from stored text: a setting that no longer reads is listed and does
    /// nothing, except Object Lock, which the bucket keeps.
    @Test func unreadableSettingsAreListed() {
        let stored = [
            BucketAccessSetting(bucket: "a", name: .cors, value: "{not json"),
            BucketAccessSetting(bucket: "a", name: .lifecycle, value: "[]"),
            BucketAccessSetting(bucket: "a", name: .notifications, value: "{}"),
            BucketAccessSetting(bucket: "a", name: .acl, value: "no-such-acl"),
            BucketAccessSetting(bucket: "a", name: .objectLock, value: "garbage"),
            BucketAccessSetting(bucket: "b", name: .acl, value: "public-read"),
        ]
        let table = BucketSettingsTable(version: 7, stored: stored)
        #expect(table.version == 7)
        #expect(table.cors.isEmpty && table.subscriptions.isEmpty && table.lifecycle.isEmpty)
        #expect(table.objectLock(of: "a") == ObjectLockConfiguration(), "still locked, without a default")
        #expect(table.unreadable.map(\.setting).sorted() == ["a acl", "a cors", "a lifecycle", "a notifications"])
        #expect(table.anonymous.allows(.read, key: Array("b/k".utf8)))
        #expect(!table.anonymous.allows(.read, key: Array("a/k".utf8)))
    }
}

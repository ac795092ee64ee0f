import Foundation
import Testing
@testable import BlobStore

/// The store and its catalog read the time of day from `BlobStoreOptions.clock`: retention,
/// expiry and upload leases are tested by moving a `ManualClock`, with no sleep and no faketime.
@Suite struct ClockTests {
    static func store(_ dir: TempDirectory, _ clock: ManualClock) throws -> BlobStore {
        var options = BlobStoreOptions()
        options.clock = clock.clock
        return try BlobStore(directory: dir.path, options: options)
    }

    /// A version under a one-day COMPLIANCE default cannot be removed until the clock passes
    /// its retain-until date; then it can.
    @Test func retentionEndsWhenTheClockPassesIt() throws {
        let dir = TempDirectory(), clock = ManualClock(milliseconds: 1_800_000_000_000)
        let store = try Self.store(dir, clock)
        let lock = ObjectLockConfiguration(defaultMode: .compliance, days: 1)
        #expect(try store.settings.create(Bucket(name: "vault", created: 1), with: BucketAccessSetting.objectLock("vault", lock)))
        let record = try store.put(Array("keep".utf8), as: "vault/k").record
        #expect((record.lock.retainUntil ?? 0) - 1_800_000_000 == 86_400, "the default retention counts from the store's clock")
        #expect(record.modified == 1_800_000_000)
        clock.advance(seconds: 86_399)
        #expect(throws: StoreError.objectLocked) { try store.removeVersion(record.key, id: record.version) }
        clock.advance(seconds: 1)
        let removal = try store.removeVersion(record.key, id: record.version)
        #expect(removal.removed?.record.version == record.version)
        #expect(try store.record(for: record.key) == nil)
    }

    /// A blob with its own deadline is readable until the clock reaches it, then gone for every
    /// reader at once, and the sweep deletes it.
    @Test func aDeadlinePassesWhenTheClockMoves() throws {
        let dir = TempDirectory(), clock = ManualClock(milliseconds: 1_800_000_000_000)
        let store = try Self.store(dir, clock)
        let stream = try store.beginWrite(expectedSize: 3, expectedSHA256: nil)
        try Array("old".utf8).withUnsafeBytes { try stream.write($0) }
        let record = try stream.commit(as: try BlobKey("ttl/a"), timeToLive: 60).record
        #expect(record.ttlExpires == 1_800_000_060)
        clock.advance(seconds: 59)
        #expect(try store.record(for: record.key) != nil)
        #expect(store.removeExpiredBlobs() == 0)
        clock.advance(seconds: 1)
        #expect(try store.record(for: record.key) == nil, "gone for readers at its deadline, before any sweep")
        #expect(store.removeExpiredBlobs() == 1)
    }

    /// A resumable upload lives for its lifetime from the store's clock; the sweep removes it
    /// once the clock passes it, not before.
    @Test func anUploadExpiresWithTheClock() throws {
        let dir = TempDirectory(), clock = ManualClock(milliseconds: 1_800_000_000_000)
        let store = try Self.store(dir, clock)
        let upload = try store.createUpload(length: 10, metadata: "", key: nil, attributes: BlobAttributes(), lifetime: 3_600)
        #expect(upload.expires == 1_800_003_600)
        clock.advance(seconds: 3_599)
        #expect(store.removeExpiredUploads() == 0)
        #expect(try store.upload(upload.id).id == upload.id)
        clock.advance(seconds: 1)
        #expect(store.removeExpiredUploads() == 1)
        #expect(throws: StoreError.self) { try store.upload(upload.id) }
    }
}

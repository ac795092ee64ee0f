import Foundation
import Testing
@testable import BlobStore

/// Object Lock in the store: a bucket's default retention locks each new version in its own
/// commit, and `check(repair:)` reports a damaged locked version without dropping or moving it.
@Suite struct ObjectLockStoreTests {
    /// `locked` is versioned with a COMPLIANCE default of one day; `plain` is versioned only.
    static func makeBuckets(_ store: BlobStore) throws {
        _ = try store.settings.create(Bucket(name: "locked", created: 1),
                                      with: BucketAccessSetting.objectLock("locked", ObjectLockConfiguration(defaultMode: .compliance, days: 1)))
        _ = try store.settings.create(Bucket(name: "plain", created: 1),
                                      with: [BucketAccessSetting(bucket: "plain", name: .versioning, value: "Enabled")])
    }

    @Test func defaultRetentionAndRepair() throws {
        let dir = TempDirectory()
        let store = try BlobStore(directory: dir.path)
        try Self.makeBuckets(store)
        let before = Int64(time(nil))
        let locked = try store.put(Array("keep".utf8), as: "locked/k").record
        let plain = try store.put(Array("free".utf8), as: "plain/k").record
        #expect(locked.lock.mode == .compliance)
        #expect((before + 86_400...Int64(time(nil)) + 86_400).contains(locked.lock.retainUntil ?? 0))
        #expect(try store.record(for: locked.key)?.lock == locked.lock, "stored by the commit")
        #expect(plain.lock == .unlocked)
        #expect(throws: StoreError.objectLocked) { try store.removeVersion(locked.key, id: locked.version) }
        // Damage both files: the repair quarantines the unlocked one, and leaves the locked one (reported).
        for record in [locked, plain] { try Data("XXXX".utf8).write(to: URL(fileURLWithPath: store.path(of: record))) }
        let report = try store.check(repair: true)
        #expect(Set(report.corrupt.map(\.key)) == [locked.key, plain.key])
        #expect(try store.record(for: locked.key) != nil && store.record(for: plain.key) == nil)
        #expect(FileManager.default.fileExists(atPath: store.path(of: locked)))
    }

    /// The lock CreateMultipartUpload asked for is kept in the upload's catalog row: a store
    /// opened again on the same index completes the upload into a version locked by its commit,
    /// over the bucket's default retention.
    @Test func multipartLockSurvivesReopening() throws {
        let dir = TempDirectory()
        let asked = ObjectLock(mode: .governance, retainUntil: Int64(time(nil)) + 7 * 86_400, legalHold: true)
        let upload: MultipartUpload
        do {
            let store = try BlobStore(directory: dir.path)
            upload = try store.createMultipart(key: try BlobKey("locked/mp"), attributes: BlobAttributes(), lifetime: 3_600, lock: asked)
        }
        let store = try BlobStore(directory: dir.path)
        try Self.makeBuckets(store)
        let reread = try store.multipart(upload.id, key: upload.key)
        #expect(reread.lock == asked)
        let part = try store.beginPart(of: reread, number: 1, expectedSize: 4, expectedSHA256: nil)
        try Array("part".utf8).withUnsafeBytes { try part.write($0) }
        let md5 = [UInt8](repeating: 7, count: 16)
        _ = try part.finish(md5: md5)
        let (record, _) = try store.completeMultipart(reread, parts: [(1, md5)], if: .always)
        #expect(record.lock == asked, "the asked retention over the bucket's default, and the hold")
        #expect(try store.record(for: upload.key)?.lock == asked)
        #expect(throws: StoreError.objectLocked) { try store.removeVersion(upload.key, id: record.version) }
    }
}

import BlobCatalog
import Foundation
import Logging
@testable import BlobStore

/// A catalog opened as production opens it (`CatalogOpener.open`, so with the record cache in
/// front of SQLite's index), seen through the suite's one `Catalog` face: the blob index's
/// operations go to the opened catalog's `blobs` (`CachedBlobIndex` on SQLite), the rest to the
/// backend's index, which `index` also gives the tests that reach behind the catalog's back.
final class OpenedCatalog: Catalog {
    /// The catalog as the opener returned it.
    let opened: BlobCatalog.Catalog
    /// The backend's index under it.
    let index: any Catalog
    private var blobs: any BlobIndex { opened.blobs }

    /// Opens `opener`'s catalog for the data directory `directory`.
    init(_ opener: CatalogOpener, directory: String) throws {
        opened = try opener.open(CatalogContext(directory: directory, invalidKeys: InvalidKeyRows(logger: Logger(label: "blobd.index"))))
        guard let index = opened.uploads as? any Catalog else { throw TestFailure("not a whole catalog: \(type(of: opened.uploads))") }
        self.index = index
    }

    // MARK: BlobIndex

    func record(for key: BlobKey) throws(StoreError) -> BlobRecord? {
        try blobs.record(for: key)
    }

    func record(for key: BlobKey, then completion: @escaping @Sendable (Result<BlobRecord?, StoreError>) -> Void) {
        blobs.record(for: key, then: completion)
    }

    func commit(_ batch: [CommitRequest]) throws(StoreError) -> [Result<IndexCommit, StoreError>] {
        try blobs.commit(batch)
    }

    func batchAnswered() {
        blobs.batchAnswered()
    }

    func remove(_ key: BlobKey, if condition: WriteCondition, events: EventDraft?) throws(StoreError) -> BlobRecord {
        try blobs.remove(key, if: condition, events: events)
    }

    func list(prefix: [UInt8], after: [UInt8]?, limit: Int) throws(StoreError) -> [BlobRecord] {
        try blobs.list(prefix: prefix, after: after, limit: limit)
    }

    func containsVersion(_ version: String) throws(StoreError) -> Bool {
        try blobs.containsVersion(version)
    }

    func allVersions() throws(StoreError) -> Set<String> {
        try blobs.allVersions()
    }

    func versions(inFolder folder: String) throws(StoreError) -> Set<String> {
        try blobs.versions(inFolder: folder)
    }

    func totals() throws(StoreError) -> (count: Int, bytes: UInt64) {
        try blobs.totals()
    }

    func forget(_ key: BlobKey) {
        blobs.forget(key)
    }

    func removeExpired(now: Int64, limit: Int, deadline: (BlobRecord) -> Int64?, versioned: (BlobRecord) -> ExpiryDeletion?, events: (BlobRecord) -> EventDraft?) throws(StoreError) -> ExpirySweep {
        try blobs.removeExpired(now: now, limit: limit, deadline: deadline, versioned: versioned, events: events)
    }

    func stampExpiry(_ stamps: [ExpiryStamp]) throws(StoreError) {
        try blobs.stampExpiry(stamps)
    }

    // MARK: BucketIndex

    func createBucket(_ bucket: Bucket, settings: [BucketAccessSetting]) throws(StoreError) -> Bool {
        try index.createBucket(bucket, settings: settings)
    }

    func bucket(_ name: String) throws(StoreError) -> Bucket? {
        try index.bucket(name)
    }

    func buckets() throws(StoreError) -> [Bucket] {
        try index.buckets()
    }

    func removeBucket(_ name: String) throws(StoreError) {
        try index.removeBucket(name)
    }

    // MARK: UploadIndex

    func insert(_ upload: UploadRecord, owner: String?, limit: Int) throws(StoreError) {
        try index.insert(upload, owner: owner, limit: limit)
    }

    func upload(_ id: String) throws(StoreError) -> UploadRecord? {
        try index.upload(id)
    }

    func owner(ofUpload id: String) throws(StoreError) -> String? {
        try index.owner(ofUpload: id)
    }

    func save(_ upload: UploadRecord) throws(StoreError) {
        try index.save(upload)
    }

    func removeUpload(_ id: String) throws(StoreError) {
        try index.removeUpload(id)
    }

    func unfinishedUploads() throws(StoreError) -> [String] {
        try index.unfinishedUploads()
    }

    func expiredUploads(now: Int64) throws(StoreError) -> [String] {
        try index.expiredUploads(now: now)
    }

    // MARK: AccessIndex

    func accessVersion() throws(StoreError) -> Int64 {
        try index.accessVersion()
    }

    func keys() throws(StoreError) -> [KeyRecord] {
        try index.keys()
    }

    func insertKey(_ key: KeyRecord) throws(StoreError) {
        try index.insertKey(key)
    }

    func replaceGrants(ofKey id: String, with grants: Grants) throws(StoreError) -> KeyRecord {
        try index.replaceGrants(ofKey: id, with: grants)
    }

    func revokeKey(_ id: String) throws(StoreError) {
        try index.revokeKey(id)
    }

    func anonymousGrants() throws(StoreError) -> Grants {
        try index.anonymousGrants()
    }

    func applyBootstrap(_ plan: BootstrapPlan) throws(StoreError) {
        try index.applyBootstrap(plan)
    }

    func bucketAccess() throws(StoreError) -> [BucketAccessSetting] {
        try index.bucketAccess()
    }

    func bucketAccess(of bucket: String) throws(StoreError) -> [BucketAccessSetting] {
        try index.bucketAccess(of: bucket)
    }

    func setBucketAccess(_ bucket: String, _ name: BucketAccessSetting.Name, to value: String?) throws(StoreError) {
        try index.setBucketAccess(bucket, name, to: value)
    }

    func insertShare(_ share: ShareRecord) throws(StoreError) {
        try index.insertShare(share)
    }

    func share(_ id: String) throws(StoreError) -> ShareRecord? {
        try index.share(id)
    }

    func shares(createdBy creator: String) throws(StoreError) -> [ShareRecord] {
        try index.shares(createdBy: creator)
    }

    func removeShare(_ id: String) throws(StoreError) {
        try index.removeShare(id)
    }

    func countDownload(_ id: String) throws(StoreError) -> Bool {
        try index.countDownload(id)
    }

    // MARK: EventOutbox

    func claimEvents(node: String, now: Int64, leaseUntil: Int64, limit: Int) throws(StoreError) -> [OutboxEvent] {
        try index.claimEvents(node: node, now: now, leaseUntil: leaseUntil, limit: limit)
    }

    func removeEvents(_ ids: [Int64]) throws(StoreError) {
        try index.removeEvents(ids)
    }

    func retryEvents(_ retries: [EventRetry]) throws(StoreError) {
        try index.retryEvents(retries)
    }

    func pendingEvents(after: Int64?, limit: Int) throws(StoreError) -> (events: [OutboxEvent], total: Int) {
        try index.pendingEvents(after: after, limit: limit)
    }

    func eventQueueStats() throws(StoreError) -> [String: (count: Int, oldest: Int64)] {
        try index.eventQueueStats()
    }

    // MARK: MultipartIndex

    func insertMultipart(_ upload: MultipartUpload, owner: String?, limit: Int) throws(StoreError) {
        try index.insertMultipart(upload, owner: owner, limit: limit)
    }

    func multipart(_ id: String) throws(StoreError) -> MultipartUpload? {
        try index.multipart(id)
    }

    func multipartUploads(prefix: [UInt8]) throws(StoreError) -> [MultipartUpload] {
        try index.multipartUploads(prefix: prefix)
    }

    func savePart(_ part: UploadedPart, of id: String) throws(StoreError) -> UploadedPart? {
        try index.savePart(part, of: id)
    }

    func parts(of id: String) throws(StoreError) -> [UploadedPart] {
        try index.parts(of: id)
    }

    func markCompleted(_ id: String, etag: String, checksum: String?) throws(StoreError) {
        try index.markCompleted(id, etag: etag, checksum: checksum)
    }

    func removeMultipart(_ id: String) throws(StoreError) {
        try index.removeMultipart(id)
    }

    func expiredMultipartUploads(now: Int64) throws(StoreError) -> [String] {
        try index.expiredMultipartUploads(now: now)
    }

    func extendMultipart(_ id: String, until expires: Int64) throws(StoreError) {
        try index.extendMultipart(id, until: expires)
    }

    // MARK: VersionIndex

    func deleteMarking(_ key: BlobKey, marker: BlobRecord, if condition: WriteCondition, events: EventDraft?) throws(StoreError) -> VersionRemoval {
        defer { blobs.forget(key) }  // as BlobStore does: these change the current record behind the cache
        return try index.deleteMarking(key, marker: marker, if: condition, events: events)
    }

    func removeVersion(_ key: BlobKey, id: String, if condition: WriteCondition, events: EventDraft?) throws(StoreError) -> VersionRemoval {
        defer { blobs.forget(key) }  // as BlobStore does: these change the current record behind the cache
        return try index.removeVersion(key, id: id, if: condition, events: events)
    }

    func setLock(_ key: BlobKey, id: String?, retention: ObjectLock?, legalHold: Bool?, bypassGovernance: Bool) throws(StoreError) -> BlobVersion {
        defer { blobs.forget(key) }  // as BlobStore does: these change the current record behind the cache
        return try index.setLock(key, id: id, retention: retention, legalHold: legalHold, bypassGovernance: bypassGovernance)
    }

    func version(_ key: BlobKey, id: String) throws(StoreError) -> BlobVersion? {
        try index.version(key, id: id)
    }

    func newestNoncurrent(_ key: BlobKey) throws(StoreError) -> BlobVersion? {
        try index.newestNoncurrent(key)
    }

    func versions(prefix: [UInt8], after cursor: VersionCursor?, limit: Int) throws(StoreError) -> [BlobVersion] {
        try index.versions(prefix: prefix, after: cursor, limit: limit)
    }

    func removeExpiredVersions(now: Int64, limit: Int, deadline: (DueVersion) -> Int64?, events: (BlobVersion) -> EventDraft?) throws(StoreError) -> VersionExpirySweep {
        try index.removeExpiredVersions(now: now, limit: limit, deadline: deadline, events: events)
    }

    func reviewVersions(prefix: [UInt8], after cursor: VersionRowCursor?, limit: Int, at time: Int64) throws(StoreError) -> VersionRowCursor? {
        try index.reviewVersions(prefix: prefix, after: cursor, limit: limit, at: time)
    }
}

/// The backend's index under `catalog` when it is an `OpenedCatalog`, else `catalog` itself.
func backendIndex(_ catalog: Any) -> Any {
    (catalog as? OpenedCatalog)?.index ?? catalog
}

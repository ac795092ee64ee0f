import BlobStore
import CatalogSQLite
import Synchronization

/// Makes the next reads of a tus upload from the catalog fail as an unreachable index does
/// (`.index(.unavailable)`), for an in-process server opened with `catalog(failing:)`: the
/// answers a catalog that fails now and then must get.
public final class FailingUploadReads: Sendable {
    private let remaining = Mutex(0)

    public init() {}

    /// The next `count` reads of an upload fail.
    public func failNext(_ count: Int) { remaining.withLock { $0 = count } }

    func shouldFail() -> Bool {
        remaining.withLock { count in
            guard count > 0 else { return false }
            count -= 1
            return true
        }
    }

    /// The SQLite catalog, with its uploads read through `self`.
    var opener: CatalogOpener {
        CatalogOpener(isShared: false) { [self] context throws(StoreError) in
            let opened = try CatalogOpener.sqlite.open(context)
            var catalog = Catalog(blobs: opened.blobs, uploads: Uploads(base: opened.uploads, failures: self), buckets: opened.buckets,
                                  multipart: opened.multipart, access: opened.access, events: opened.events, node: opened.node)
            catalog.versions = opened.versions
            return catalog
        }
    }

    private struct Uploads: UploadIndex {
        let base: any UploadIndex
        let failures: FailingUploadReads

        func upload(_ id: String) throws(StoreError) -> UploadRecord? {
            if failures.shouldFail() { throw .index(.unavailable("injected by the test")) }
            return try base.upload(id)
        }
        func insert(_ upload: UploadRecord, owner: String?, limit: Int) throws(StoreError) {
            try base.insert(upload, owner: owner, limit: limit)
        }
        func owner(ofUpload id: String) throws(StoreError) -> String? { try base.owner(ofUpload: id) }
        func save(_ upload: UploadRecord) throws(StoreError) { try base.save(upload) }
        func removeUpload(_ id: String) throws(StoreError) { try base.removeUpload(id) }
        func unfinishedUploads() throws(StoreError) -> [String] { try base.unfinishedUploads() }
        func expiredUploads(now: Int64) throws(StoreError) -> [String] { try base.expiredUploads(now: now) }
    }
}

import BlobStore
import CatalogPostgres
import CatalogSQLite
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What `migrateIndex` did.
public struct MigrationReport: Sendable {
    /// Blob records read from the SQLite index, and how many of them the database did not have.
    public var blobs = 0
    public var added = 0
    public var bytes: UInt64 = 0
    public var uploads = 0
    public var multipartUploads = 0
    public var buckets = 0
    /// True if stopped before the end (`shouldStop`): run it again to go on.
    public var interrupted = false
}

extension BlobStore {
    /// The single-node index's name once it has been moved to PostgreSQL.
    public static let migratedIndexName = "index.sqlite.migrated"

    /// Moves a single-node data directory's SQLite index into the PostgreSQL database at `url`:
    /// every blob record (version, digests, ETag parts, metadata), bucket, tus upload (offset,
    /// hash state, attributes, owner) and unfinished multipart upload with its owner and parts.
    /// The files stay where they are. Offline: it holds the data directory's lock throughout.
    ///
    /// Safe to stop (`shouldStop`, checked between batches of 500) and to run again: what the
    /// database has already is kept. At the end the SQLite index is renamed
    /// `index.sqlite.migrated` and `nodes/` is made, so that a blobd started on this directory
    /// without `--index` refuses it instead of serving an empty index over the cluster's files.
    public static func migrateIndex(directory: String, to url: String, progress: (WorkProgress) -> Void = { _ in },
                                    shouldStop: () -> Bool = { false }) throws(StoreError) -> MigrationReport {
        var report = MigrationReport()
        let target = try PostgresBlobIndex(url: url, connections: 2)
        do {
            // Opening the store takes the lock and undoes what a crash left, as a start would.
            let store = try BlobStore(directory: directory, catalog: .sqlite)
            let totals = try store.catalog.blobs.totals()
            report.buckets = try store.buckets.buckets().count
            for bucket in try store.buckets.buckets() { _ = try target.createBucket(bucket) }
            var after: [UInt8]?
            while true {
                if shouldStop() {
                    report.interrupted = true
                    return report
                }
                let page = try store.catalog.blobs.list(prefix: [], after: after, limit: 500)
                guard let last = page.last else { break }
                report.added += try target.importBatch(records: page)
                report.blobs += page.count
                report.bytes += page.reduce(0) { $0 + $1.size }
                progress(WorkProgress(done: report.blobs, total: max(totals.count, report.blobs), bytesDone: report.bytes,
                                      bytesTotal: max(totals.bytes, report.bytes)))
                after = last.key.bytes
            }
            // Every upload, finished or not, and every unfinished multipart upload with its
            // parts; each with its owner, whose --max-open-uploads it goes on counting toward.
            guard let source = store.catalog.uploads as? SQLiteBlobIndex else {
                throw StoreError.index(.failed("migrate-index reads a single-node (SQLite) index"))
            }
            let uploads = try source.exportUploads()
            let multipart = try source.exportMultipart()
            _ = try target.importBatch(records: [], uploads: uploads, multipart: multipart)
            report.uploads = uploads.count
            report.multipartUploads = multipart.count
            store.markStoppedCleanly()
        }
        // The store is closed (its SQLite connections with it): retire the single-node index.
        try FileSystem.makeDirectory(directory + "/nodes")
        for suffix in ["", "-wal", "-shm"] where FileSystem.isAccessible(directory + "/index.sqlite" + suffix) {
            try FileSystem.rename(directory + "/index.sqlite" + suffix, directory + "/" + migratedIndexName + suffix)
        }
        try FileSystem.syncDirectory(directory)
        return report
    }
}

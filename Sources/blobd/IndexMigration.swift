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
    /// Noncurrent versions and delete markers read, and how many of them were new.
    public var versions = 0
    public var versionsAdded = 0
    public var uploads = 0
    public var multipartUploads = 0
    public var buckets = 0
    /// Bucket settings (versioning, Object Lock, ACLs, policies, CORS, lifecycle, notifications).
    public var settings = 0
    /// Events not yet delivered.
    public var events = 0
    /// Keys made at run time or by a bootstrap file (a revoked key is gone already), and how
    /// many of them were new.
    public var keys = 0
    public var keysAdded = 0
    /// Share links, and how many of them were new.
    public var shares = 0
    public var sharesAdded = 0
    /// Access settings not tied to a bucket (the anonymous grants).
    public var accessSettings = 0
    /// Replaced or deleted versions whose files were still waiting to be reclaimed.
    public var garbage = 0
    /// True if stopped before the end (`shouldStop`): run it again to go on.
    public var interrupted = false
}

extension BlobStore {
    /// The single-node index's name once it has been moved to PostgreSQL.
    public static let migratedIndexName = "index.sqlite.migrated"

    /// Moves a single-node data directory's SQLite index into the PostgreSQL database at `url`:
    /// every bucket with its settings, blob record (version, digests, ETag parts, metadata,
    /// Object Lock), noncurrent version and delete marker (in their order, with their locks),
    /// tus upload (offset, hash state, attributes, owner), unfinished multipart upload with its
    /// owner and parts, event not yet delivered, key (made at run time or by a bootstrap file,
    /// with its grants, expiry, token hash and S3 secret), share link (with its download
    /// count), the anonymous grants and the versions still waiting to be reclaimed. The files
    /// stay where they are. Offline: it holds the data directory's lock throughout.
    ///
    /// Safe to stop (`shouldStop`, checked between batches of 500) and to run again: what the
    /// database has already is kept, and nothing is added twice. At the end the SQLite index is
    /// renamed `index.sqlite.migrated` and `nodes/` is made, so that a blobd started on this
    /// directory without `--index` refuses it instead of serving an empty index over the
    /// cluster's files.
    public static func migrateIndex(directory: String, to url: String, progress: (WorkProgress) -> Void = { _ in },
                                    shouldStop: () -> Bool = { false }) throws(StoreError) -> MigrationReport {
        var report = MigrationReport()
        let target = try PostgresBlobIndex(url: url, connections: 2)
        do {
            // Opening the store takes the lock and undoes what a crash left, as a start would.
            let store = try BlobStore(directory: directory, catalog: .sqlite)
            guard let source = store.catalog.uploads as? SQLiteBlobIndex else {
                throw StoreError.index(.failed("migrate-index reads a single-node (SQLite) index"))
            }
            let buckets = try store.buckets.buckets()
            report.buckets = buckets.count
            for bucket in buckets { _ = try target.createBucket(bucket) }
            // Settings before versions: a node started early sees a versioned bucket as such.
            let settings = try source.bucketAccess()
            _ = try target.importSettings(settings)
            report.settings = settings.count
            guard try migrateBlobs(store, to: target, report: &report, progress: progress, shouldStop: shouldStop),
                  try migrateVersions(source, to: target, report: &report, shouldStop: shouldStop),
                  try migrateAccess(source, to: target, report: &report, shouldStop: shouldStop) else {
                report.interrupted = true
                return report
            }
            try migrateUploadsAndEvents(source, to: target, report: &report)
            try migrateGarbage(source, to: target, report: &report)
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

    /// Every current record, in batches of 500 in key order; false if stopped.
    private static func migrateBlobs(_ store: BlobStore, to target: PostgresBlobIndex, report: inout MigrationReport,
                                     progress: (WorkProgress) -> Void, shouldStop: () -> Bool) throws(StoreError) -> Bool {
        let totals = try store.catalog.blobs.totals()
        var after: [UInt8]?
        while true {
            if shouldStop() { return false }
            let page = try store.catalog.blobs.list(prefix: [], after: after, limit: 500)
            guard let last = page.last else { return true }
            report.added += try target.importBatch(records: page)
            report.blobs += page.count
            report.bytes += page.reduce(0) { $0 + $1.size }
            progress(WorkProgress(done: report.blobs, total: max(totals.count, report.blobs), bytesDone: report.bytes,
                                  bytesTotal: max(totals.bytes, report.bytes)))
            after = last.key.bytes
        }
    }

    /// Every noncurrent version and delete marker, oldest first in batches of 500, each added
    /// once; false if stopped.
    private static func migrateVersions(_ source: SQLiteBlobIndex, to target: PostgresBlobIndex, report: inout MigrationReport,
                                        shouldStop: () -> Bool) throws(StoreError) -> Bool {
        var after: Int64 = 0
        while true {
            if shouldStop() { return false }
            let page = try source.exportVersions(after: after, limit: 500)
            guard let last = page.last else { return true }
            report.versionsAdded += try target.importVersions(page.versions)
            report.versions += page.versions.count
            after = last
        }
    }

    /// Every upload, finished or not, and every unfinished multipart upload with its parts,
    /// each with its owner, whose --max-open-uploads it goes on counting toward; then the
    /// events not yet delivered, with their ids.
    private static func migrateUploadsAndEvents(_ source: SQLiteBlobIndex, to target: PostgresBlobIndex,
                                                report: inout MigrationReport) throws(StoreError) {
        let uploads = try source.exportUploads()
        let multipart = try source.exportMultipart()
        _ = try target.importBatch(records: [], uploads: uploads, multipart: multipart)
        report.uploads = uploads.count
        report.multipartUploads = multipart.count
        var after: Int64?
        while true {
            let page = try source.pendingEvents(after: after, limit: 500).events
            guard let last = page.last else { return }
            _ = try target.importEvents(page)
            report.events += page.count
            after = last.id
        }
    }
    /// Every key, then every share link (which borrow their creators' grants), each in batches
    /// of 500 in id order, and the anonymous grants; a row the database has already is kept as
    /// it is there. False if stopped.
    private static func migrateAccess(_ source: SQLiteBlobIndex, to target: PostgresBlobIndex, report: inout MigrationReport,
                                      shouldStop: () -> Bool) throws(StoreError) -> Bool {
        var after = ""
        while true {
            if shouldStop() { return false }
            let page = try source.exportKeys(after: after, limit: 500)
            guard let last = page.last else { break }
            report.keysAdded += try target.importKeys(page.keys)
            report.keys += page.keys.count
            after = last
        }
        after = ""
        while true {
            if shouldStop() { return false }
            let page = try source.exportShares(after: after, limit: 500)
            guard let last = page.last else { break }
            report.sharesAdded += try target.importShares(page.shares)
            report.shares += page.shares.count
            after = last
        }
        let settings = try source.exportAccessSettings()
        _ = try target.importAccessSettings(settings)
        report.accessSettings = settings.count
        return true
    }

    /// The versions whose files still wait to be reclaimed (opening the store has unlinked
    /// those a crash left, so normally none), in batches of 500: in the cluster a node reclaims
    /// them after the grace period. A version the index still names is no garbage.
    private static func migrateGarbage(_ source: SQLiteBlobIndex, to target: PostgresBlobIndex,
                                       report: inout MigrationReport) throws(StoreError) {
        var versions: [String] = []
        for version in try source.garbage() where try !source.containsVersion(version) { versions.append(version) }
        var start = 0
        while start < versions.count {
            let batch = Array(versions[start..<min(start + 500, versions.count)])
            _ = try target.importGarbage(batch)
            report.garbage += batch.count
            start += batch.count
        }
    }
}

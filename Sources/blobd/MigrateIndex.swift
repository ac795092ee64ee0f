import ArgumentParser
import BlobStore
import Foundation
import PostgresClient

/// `blobd migrate-index --data-dir DIR --to postgres://...`: a single node's index into the
/// PostgreSQL database a cluster shares.
struct MigrateIndex: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate-index",
        abstract: "Move a single-node data directory's index into PostgreSQL, for a cluster.",
        discussion: """
            Offline: stop blobd first. Keeps every blob, ETag, digest, metadata, version, delete marker, Object Lock, \
            bucket with its settings, unfinished upload, pending event, key made by the API or a bootstrap file (its \
            secrets and grants), share link (its download count) and the anonymous grants; the files stay where they are. Shows progress on stderr; Ctrl-C stops it cleanly, and running it again goes on where it \
            stopped. At the end the SQLite index is renamed index.sqlite.migrated; then start the nodes with --index.
            """)

    @Option(help: "Data directory (BLOBD_DATA_DIR; default ./data).") var dataDir: String?
    @Option(help: "The PostgreSQL URL of the cluster's index, postgres://USER@HOST/DB (the PG* variables fill in the rest).") var to: String

    func run() throws {
        let configuration = Configuration.common(dataDir: dataDir, index: nil)
        let directory = configuration.dataDirectory
        guard to.hasPrefix("postgres://") || to.hasPrefix("postgresql://") else {
            throw ValidationError("--to must be a postgres:// URL")
        }
        guard FileManager.default.fileExists(atPath: directory + "/index.sqlite") else {
            let done = FileManager.default.fileExists(atPath: directory + "/" + BlobStore.migratedIndexName)
            printError("blobd migrate-index: \(directory) has no index.sqlite" + (done ? " (it was migrated already)" : ""))
            throw ExitCode(done ? 0 : 2)
        }
        let report = try runLongCommand("migrate-index", configuration, context: " (index \(PostgresPool.redacted(to)))") {
            progress, shouldStop in
            try BlobStore.migrateIndex(directory: directory, to: to, progress: { done in
                progress(done)
                configuration.testing?.pauseAfterMigrationBatch()
            }, shouldStop: shouldStop)
        }
        if report.interrupted {
            print("stopped after \(report.blobs) blobs (\(report.added) new in the database); run the same command again to go on")
            throw ExitCode(130)
        }
        print("migrated \(report.blobs) blobs (\(ProgressReporter.bytes(report.bytes)); \(report.added) new in the database, "
              + "\(report.blobs - report.added) there already), \(report.versions) noncurrent versions and delete markers "
              + "(\(report.versionsAdded) new), \(report.buckets) buckets, \(report.settings) bucket settings, "
              + "\(report.uploads) tus uploads, \(report.multipartUploads) multipart uploads, \(report.events) pending events, "
              + "\(report.keys) keys (\(report.keysAdded) new), \(report.shares) share links (\(report.sharesAdded) new), "
              + "\(report.accessSettings) anonymous grant settings, \(report.garbage) versions to reclaim "
              + "to \(PostgresPool.redacted(to))")
        print("next: start every node with --index \(PostgresPool.redacted(to)) --data-dir \(directory) --node-id NAME")
    }
}

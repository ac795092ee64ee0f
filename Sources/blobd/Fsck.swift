import ArgumentParser
import BlobStore
import CatalogPostgres
import CatalogSQLite
import Foundation

/// `blobd fsck --data-dir DIR [--repair]`: re-hash every blob against the index.
struct Fsck: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check every blob against the index; exit 1 if anything is wrong.",
        discussion: """
            Reports corrupt, missing and unindexed files, with progress on stderr. Refuses to run while a blobd holds a \
            single-node data directory; in a cluster (--index) it runs beside the nodes. Ctrl-C stops it cleanly.
            """)

    @Option(help: "Data directory (BLOBD_DATA_DIR; default ./data).") var dataDir: String?
    @Option(help: "A cluster's PostgreSQL index (BLOBD_INDEX); default the data directory's SQLite index.") var index: String?
    @Flag(help: "Drop records of missing files; move corrupt and unindexed files to DIR/quarantine.") var repair = false

    func run() throws {
        let configuration = Configuration.common(dataDir: dataDir, index: index)
        let directory = configuration.dataDirectory
        var options = BlobStoreOptions()
        var catalog = CatalogOpener.sqlite
        if let url = configuration.indexURL {
            // fsck runs beside the cluster's nodes, as a node of its own.
            catalog = .postgres(url: url, connections: 2)
            options.nodeID = "fsck"
        } else if !FileManager.default.fileExists(atPath: directory + "/index.sqlite") {
            printError("blobd fsck: \(directory) is not a blobd data directory (no index.sqlite)")
            throw ExitCode(2)
        }
        let report = try runLongCommand("fsck", configuration) { progress, shouldStop in
            let store = try BlobStore(directory: directory, catalog: catalog, options: options)
            let report = try store.check(repair: repair, progress: progress, shouldStop: shouldStop)
            store.markStoppedCleanly()
            return report
        }
        for record in report.corrupt { print("corrupt \(record.key)") }
        for record in report.missing { print("missing \(record.key)") }
        for path in report.unindexed { print("unindexed \(path)") }
        for key in report.invalidKeys { print("invalid-key \(InvalidKeyRows.escaped(key))") }
        let invalid = report.invalidKeys.isEmpty ? "" : ", \(report.invalidKeys.count) with an invalid key"
        let verb = repair ? " (repaired)" : ""
        let stopped = report.interrupted ? " before it was stopped" : ""
        print("checked \(report.checked) blobs\(stopped): \(report.corrupt.count) corrupt, \(report.missing.count) missing, "
              + "\(report.unindexed.count) unindexed\(invalid)\(report.isClean || report.interrupted ? "" : verb); \(ProgressReporter.bytes(report.bytes)) read"
              + (report.interrupted ? "; unindexed files not looked for, nothing repaired" : ""))
        if report.interrupted { throw ExitCode(130) }
        if !report.isClean { throw ExitCode(1) }
    }
}

/// Writes a line to stderr.
func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

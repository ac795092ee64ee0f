import ArgumentParser
import BlobStore
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
        if let url = configuration.indexURL {
            // fsck runs beside the cluster's nodes, as a node of its own.
            options.index = .postgres(url: url, connections: 2)
            options.nodeID = "fsck"
        } else if !FileManager.default.fileExists(atPath: directory + "/index.sqlite") {
            printError("blobd fsck: \(directory) is not a blobd data directory (no index.sqlite)")
            throw ExitCode(2)
        }
        stopOnInterrupt()
        let progress = ProgressReporter("fsck", logInterval: configuration.progressInterval)
        let report: CheckReport
        do {
            let store = try BlobStore(directory: directory, options: options)
            report = try store.check(repair: repair, progress: progress.update,
                                     shouldStop: { interruptRequested.load(ordering: .relaxed) })
            progress.finish()
            store.markStoppedCleanly()
        } catch StoreError.dataDirectoryLocked(let path) {
            printError("blobd fsck: the data directory \(path) is in use by a running blobd; stop it first")
            throw ExitCode(2)
        } catch {
            progress.finish()
            printError("blobd fsck: \(error)")
            throw ExitCode(2)
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

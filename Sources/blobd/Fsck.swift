import ArgumentParser
import BlobStore
import Foundation

/// `blobd fsck --data-dir DIR [--repair]`: re-hash every blob against the index.
struct Fsck: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check every blob against the index; exit 1 if anything is wrong.",
        discussion: "Reports corrupt, missing and unindexed files. Refuses to run while a blobd holds the data directory.")

    @Option(help: "Data directory (BLOBD_DATA_DIR; default ./data).") var dataDir: String?
    @Flag(help: "Drop records of missing files; move corrupt and unindexed files to DIR/quarantine.") var repair = false

    func run() throws {
        let directory = dataDir ?? ProcessInfo.processInfo.environment["BLOBD_DATA_DIR"] ?? "./data"
        guard FileManager.default.fileExists(atPath: directory + "/index.sqlite") else {
            printError("blobd fsck: \(directory) is not a blobd data directory (no index.sqlite)")
            throw ExitCode(2)
        }
        let report: CheckReport
        do {
            let store = try BlobStore(directory: directory)
            report = try store.check(repair: repair)
            store.markStoppedCleanly()
        } catch StoreError.dataDirectoryLocked(let path) {
            printError("blobd fsck: the data directory \(path) is in use by a running blobd; stop it first")
            throw ExitCode(2)
        } catch {
            printError("blobd fsck: \(error)")
            throw ExitCode(2)
        }
        for record in report.corrupt { print("corrupt \(record.key)") }
        for record in report.missing { print("missing \(record.key)") }
        for path in report.unindexed { print("unindexed \(path)") }
        let verb = repair ? " (repaired)" : ""
        print("checked \(report.checked) blobs: \(report.corrupt.count) corrupt, \(report.missing.count) missing, "
              + "\(report.unindexed.count) unindexed\(report.isClean ? "" : verb)")
        if !report.isClean { throw ExitCode(1) }
    }
}

/// Writes a line to stderr.
func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

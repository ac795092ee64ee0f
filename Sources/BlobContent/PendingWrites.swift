import BlobCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The versions being written, so that `BlobStore.recover()` can remove their files after a
/// crash. A write appends its version and a newline to the log `tmp/pending-N` before its file
/// is created in `blobs/`, and is forgotten once that file is committed or removed.
///
/// One small append per write, where an empty marker file per write cost a file creation and an
/// unlink (15 % of the CPU of a 4 KiB PUT). Appends are not fsynced: like the marker files
/// before them, they reach the disk with ordinary writeback, well before most files they name.
/// Should a crash lose an entry but not its file, that file is an unindexed orphan, which
/// `blobd fsck` reports and quarantines; a committed blob is never at stake.
///
/// A log is made at the first write, replaced by the next one after `entriesPerLog` appends,
/// and deleted as soon as every write it names has been forgotten and it is not appended to.
package final class PendingWrites: Sendable {
    /// A write's entry: which log holds it.
    package struct Entry: Sendable {
        fileprivate let log: Int
    }

    private struct Logs {
        var current: Int
        /// The current log, open for appending once a write has been logged; -1 before.
        var descriptor: Int32 = -1
        var appended = 0
        /// Entries not forgotten yet, per log.
        var open: [Int: Int] = [:]
    }

    package static let entriesPerLog = 1 << 15
    private let folder: String
    private let logs: Mutex<Logs>

    /// Logs in `folder`, starting with number `first`.
    package init(folder: String, first: Int) {
        self.folder = folder
        logs = Mutex(Logs(current: first))
    }

    deinit {
        logs.withLock { logs in
            guard logs.descriptor >= 0 else { return }
            close(logs.descriptor)
            if logs.open[logs.current, default: 0] == 0 { FileSystem.remove(Self.path(folder, logs.current)) }
        }
    }

    /// Logs `version` as being written; call before its file exists.
    package func add(_ version: String) throws(StoreError) -> Entry {
        let line = Array((version + "\n").utf8)
        return try logs.withLock { logs throws(StoreError) in
            if logs.descriptor < 0 {
                logs.descriptor = try Self.open(folder, logs.current)
            } else if logs.appended == Self.entriesPerLog {
                let next = try Self.open(folder, logs.current + 1)
                close(logs.descriptor)
                if logs.open[logs.current, default: 0] == 0 {
                    logs.open[logs.current] = nil
                    FileSystem.remove(Self.path(folder, logs.current))
                }
                logs.current += 1
                logs.descriptor = next
                logs.appended = 0
            }
            let descriptor = logs.descriptor
            try line.withUnsafeBytes { bytes in
                Result { () throws(StoreError) in try FileSystem.writeAll(descriptor, bytes) }
            }.get()
            logs.appended += 1
            logs.open[logs.current, default: 0] += 1
            return Entry(log: logs.current)
        }
    }

    /// Makes the current log durable (at a clean stop).
    package func sync() {
        logs.withLock { logs in
            let descriptor = logs.descriptor
            if descriptor >= 0 { _ = FileSystem.interruptible { fsync(descriptor) } }
        }
    }

    /// Forgets a write whose file is committed or removed.
    package func forget(_ entry: Entry) {
        logs.withLock { logs in
            let left = logs.open[entry.log, default: 1] - 1
            if left == 0 && entry.log != logs.current {
                logs.open[entry.log] = nil
                FileSystem.remove(Self.path(folder, entry.log))
            } else {
                logs.open[entry.log] = left
            }
        }
    }

    /// The logs a previous run left in `folder`, by number, with the versions they name (a line
    /// cut short by a crash names nothing: its file was not created yet).
    package static func leftBehind(in folder: String) -> [(log: Int, versions: [String])] {
        FileSystem.contents(of: folder).compactMap { name -> (log: Int, versions: [String])? in
            guard name.hasPrefix("pending-"), let log = Int(name.dropFirst("pending-".count)) else { return nil }
            let text = FileSystem.contents(ofFile: path(folder, log)) ?? []
            let versions = text.split(separator: UInt8(ascii: "\n"))
                .filter { $0.count == BlobRecord.versionLength && $0.allSatisfy(isHexDigit) }
                .map { String(decoding: $0, as: UTF8.self) }
            return (log, versions)
        }.sorted { $0.log < $1.log }
    }

    package static func path(_ folder: String, _ log: Int) -> String {
        "\(folder)/pending-\(log)"
    }

    private static func open(_ folder: String, _ log: Int) throws(StoreError) -> Int32 {
        try FileSystem.open(path(folder, log), O_WRONLY | O_CREAT | O_APPEND | O_TRUNC)
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }
}

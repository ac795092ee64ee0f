import Synchronization
import SystemCalls

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
final class PendingWrites: Sendable {
    /// A write's entry: which log holds it.
    struct Entry: Sendable {
        fileprivate let log: Int
    }

    private struct Logs {
        var current: Int
        /// The current log, open for appending once a write has been logged; -1 before.
        var descriptor: FileDescriptor?
        var appended = 0
        /// Entries not forgotten yet, per log.
        var open: [Int: Int] = [:]
    }

    static let entriesPerLog = 1 << 15
    private let folder: String
    private let logs: Mutex<Logs>

    /// Logs in `folder`, starting with number `first`.
    init(folder: String, first: Int) {
        self.folder = folder
        logs = Mutex(Logs(current: first))
    }

    deinit {
        logs.withLock { logs in
            guard let descriptor = logs.descriptor else { return }
            descriptor.close()
            if logs.open[logs.current, default: 0] == 0 { FileSystem.remove(Self.path(folder, logs.current)) }
        }
    }

    /// Logs `version` as being written; call before its file exists.
    func add(_ version: String) throws(StoreError) -> Entry {
        let line = Array((version + "\n").utf8)
        return try logs.withLock { logs throws(StoreError) in
            guard let current = logs.descriptor else {
                logs.descriptor = try Self.open(folder, logs.current)
                return try Self.append(line, to: &logs)
            }
            if logs.appended == Self.entriesPerLog {
                let next = try Self.open(folder, logs.current + 1)
                current.close()
                if logs.open[logs.current, default: 0] == 0 {
                    logs.open[logs.current] = nil
                    FileSystem.remove(Self.path(folder, logs.current))
                }
                logs.current += 1
                logs.descriptor = next
                logs.appended = 0
            }
            return try Self.append(line, to: &logs)
        }
    }

    /// Appends `line` to the current log, which is open.
    private static func append(_ line: [UInt8], to logs: inout Logs) throws(StoreError) -> Entry {
        guard let descriptor = logs.descriptor else { throw .io(operation: "append to the pending log", errno: EBADF) }
        try line.withUnsafeBytes { bytes in
            Result { () throws(StoreError) in try FileSystem.writeAll(descriptor, bytes) }
        }.get()
        logs.appended += 1
        logs.open[logs.current, default: 0] += 1
        return Entry(log: logs.current)
    }

    /// Makes the current log durable (at a clean stop).
    func sync() {
        logs.withLock { logs in
            try? logs.descriptor?.sync()
        }
    }

    /// Forgets a write whose file is committed or removed.
    func forget(_ entry: Entry) {
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
    static func leftBehind(in folder: String) -> [(log: Int, versions: [String])] {
        FileSystem.contents(of: folder).compactMap { name -> (log: Int, versions: [String])? in
            guard name.hasPrefix("pending-"), let log = Int(name.dropFirst("pending-".count)) else { return nil }
            let text = FileSystem.contents(ofFile: path(folder, log)) ?? []
            let versions = text.split(separator: UInt8(ascii: "\n"))
                .filter { $0.count == BlobRecord.versionLength && $0.allSatisfy(isHexDigit) }
                .map { String(decoding: $0, as: UTF8.self) }
            return (log, versions)
        }.sorted { $0.log < $1.log }
    }

    static func path(_ folder: String, _ log: Int) -> String {
        "\(folder)/pending-\(log)"
    }

    private static func open(_ folder: String, _ log: Int) throws(StoreError) -> FileDescriptor {
        try FileSystem.open(path(folder, log), O_WRONLY | O_CREAT | O_APPEND | O_TRUNC)
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }
}

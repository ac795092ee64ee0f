import BlobCatalog
import BlobContent
import BlobCore
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// What `check(repair:)` found.
public struct CheckReport: Sendable {
    /// Blobs whose bytes were read and hashed.
    public var checked = 0
    /// Index records whose file does not hash to the recorded SHA-256 or size.
    public var corrupt: [BlobRecord] = []
    /// Index records whose file is gone.
    public var missing: [BlobRecord] = []
    /// Files in `blobs/` that no record names (paths relative to the data directory).
    public var unindexed: [String] = []
    /// Raw keys of index records that fail key validation (in byte order): no request can reach
    /// them and their files were not checked; only a hand can fix or remove them.
    public var invalidKeys: [[UInt8]] = []
    /// Bytes read and hashed.
    public var bytes: UInt64 = 0
    /// True if the check was stopped before the end (`shouldStop`): what it found so far holds,
    /// but unindexed files were not looked for.
    public var interrupted = false

    /// True when nothing is wrong.
    public var isClean: Bool { corrupt.isEmpty && missing.isEmpty && unindexed.isEmpty && invalidKeys.isEmpty }
}

/// How far a check (or a migration) has come.
public struct WorkProgress: Sendable {
    public var done = 0
    public var total = 0
    public var bytesDone: UInt64 = 0
    public var bytesTotal: UInt64 = 0

    public init(done: Int = 0, total: Int = 0, bytesDone: UInt64 = 0, bytesTotal: UInt64 = 0) {
        self.done = done
        self.total = total
        self.bytesDone = bytesDone
        self.bytesTotal = bytesTotal
    }
}

extension BlobStore {
    /// Re-hashes every blob against the index and looks for files the index does not name.
    /// With `repair`, records of missing files are dropped, and corrupt and unindexed files are
    /// moved to `quarantine/` (never deleted), corrupt ones losing their record; a version under
    /// Object Lock is reported but left as it is.
    ///
    /// In a cluster, a file is not unindexed while it waits out the reclaim grace period, or
    /// while a live node (one whose `nodes/NODE/lock` is held) lists it as being written; the
    /// pending writes of a node that is gone are its leftovers, and are.
    ///
    /// `progress` is called after every blob; `shouldStop` is asked as often, and when it says
    /// so the check ends at once with what it found (`interrupted`), repairing nothing.
    public func check(repair: Bool, progress: (WorkProgress) -> Void = { _ in },
                      shouldStop: () -> Bool = { false }) throws(StoreError) -> CheckReport {
        var report = CheckReport()
        let totals = try index.totals()
        var after: [UInt8]?
        scan: while true {
            let page = try index.list(prefix: [], after: after, limit: 1000)
            for record in page {
                if shouldStop() {
                    report.interrupted = true
                    break scan
                }
                switch try verify(record) {
                case .intact: break
                case .missing: report.missing.append(record)
                case .corrupt: report.corrupt.append(record)
                }
                report.checked += 1
                report.bytes += record.size
                progress(WorkProgress(done: report.checked, total: max(totals.count, report.checked), bytesDone: report.bytes,
                                  bytesTotal: max(totals.bytes, report.bytes)))
            }
            guard let last = page.last else { break }
            after = last.key.bytes
        }
        if report.interrupted { return report }
        // The scan went through every record: the index reported those it had to skip.
        report.invalidKeys = invalidKeys.keys(in: "blobs")
        var known = try index.allVersions()
        if let shared {
            known.formUnion(try shared.garbage())
            known.formUnion(try versionsBeingWritten())
        }
        for folder in FileSystem.contents(of: directory + "/blobs") {
            for name in FileSystem.contents(of: "\(directory)/blobs/\(folder)") where !known.contains(name) {
                report.unindexed.append("blobs/\(folder)/\(name)")
            }
        }
        report.unindexed.sort()
        if repair { try self.repair(report) }
        return report
    }

    /// The versions live cluster nodes are writing: those in the pending logs of every node
    /// whose lock someone holds (this one's too).
    private func versionsBeingWritten() throws(StoreError) -> Set<String> {
        var versions = Set<String>()
        for node in FileSystem.contents(of: directory + "/nodes") {
            let folder = "\(directory)/nodes/\(node)"
            let alive = folder == nodeDirectory || (try? DataDirectoryLock(directory: folder)) == nil
            guard alive else { continue }
            for (_, logged) in PendingWrites.leftBehind(in: folder) { versions.formUnion(logged) }
        }
        return versions
    }

    private enum Verdict { case intact, missing, corrupt }

    private func verify(_ record: BlobRecord) throws(StoreError) -> Verdict {
        guard let descriptor = try FileSystem.openIfExists(path(of: record)) else { return .missing }
        defer { descriptor.close() }
        var hasher = SHA256Hasher()
        var size: UInt64 = 0
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 4096)
        defer { buffer.deallocate() }
        while true {
            let n = try FileSystem.mapping("read") { () throws(Errno) in try descriptor.read(into: buffer) }
            if n == 0 { break }
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[..<n]))
            size += UInt64(n)
        }
        return size == record.size && hasher.finalize() == record.sha256 ? .intact : .corrupt
    }

    private func repair(_ report: CheckReport) throws(StoreError) {
        let quarantine = directory + "/quarantine"
        try FileSystem.makeDirectory(quarantine)
        // A version under Object Lock is reported, never dropped nor moved: only its lock's end frees it.
        let now = self.now()
        func locked(_ record: BlobRecord) -> Bool { record.lock.removalFailure(at: now, bypassingGovernance: false) != nil }
        for record in report.missing where !locked(record) {
            try forget(record)
        }
        for record in report.corrupt where !locked(record) {
            try FileSystem.rename(path(of: record), "\(quarantine)/\(record.version)")
            try forget(record)
        }
        for file in report.unindexed {
            try FileSystem.rename("\(directory)/\(file)", "\(quarantine)/\(file.split(separator: "/").last ?? "")")
        }
        try FileSystem.syncDirectory(quarantine)
    }

    /// Removes `record` from the index unless its key changed meanwhile (gone, or another
    /// version); an index failure throws.
    private func forget(_ record: BlobRecord) throws(StoreError) {
        do throws(StoreError) {
            _ = try index.remove(record.key, if: .version(record.version))
        } catch .notFound, .preconditionFailed {
            return
        }
    }
}

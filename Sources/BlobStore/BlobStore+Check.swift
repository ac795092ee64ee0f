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

    /// True when nothing is wrong.
    public var isClean: Bool { corrupt.isEmpty && missing.isEmpty && unindexed.isEmpty }
}

extension BlobStore {
    /// Re-hashes every blob against the index and looks for files the index does not name.
    /// With `repair`, records of missing files are dropped, and corrupt and unindexed files are
    /// moved to `quarantine/` (never deleted), corrupt ones losing their record.
    public func check(repair: Bool) throws(StoreError) -> CheckReport {
        var report = CheckReport()
        var after: [UInt8]?
        while true {
            let page = try index.list(prefix: [], after: after, limit: 1000)
            for record in page {
                switch try verify(record) {
                case .intact: break
                case .missing: report.missing.append(record)
                case .corrupt: report.corrupt.append(record)
                }
                report.checked += 1
            }
            guard let last = page.last else { break }
            after = last.key.bytes
        }
        let versions = try index.allVersions()
        for folder in FileSystem.contents(of: directory + "/blobs") {
            for name in FileSystem.contents(of: "\(directory)/blobs/\(folder)") where !versions.contains(name) {
                report.unindexed.append("blobs/\(folder)/\(name)")
            }
        }
        report.unindexed.sort()
        if repair { try self.repair(report) }
        return report
    }

    private enum Verdict { case intact, missing, corrupt }

    private func verify(_ record: BlobRecord) throws(StoreError) -> Verdict {
        let descriptor = Glibc.open(path(of: record), O_RDONLY | O_CLOEXEC)
        if descriptor < 0 {
            if errno == ENOENT { return .missing }
            throw FileSystem.error("open \(path(of: record))", errno)
        }
        defer { close(descriptor) }
        var hasher = SHA256Hasher()
        var size: UInt64 = 0
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 4096)
        defer { buffer.deallocate() }
        while true {
            let n = try FileSystem.retrying("read") { read(descriptor, buffer.baseAddress, buffer.count) }
            if n == 0 { break }
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[..<n]))
            size += UInt64(n)
        }
        return size == record.size && hasher.finalize() == record.sha256 ? .intact : .corrupt
    }

    private func repair(_ report: CheckReport) throws(StoreError) {
        let quarantine = directory + "/quarantine"
        try FileSystem.makeDirectory(quarantine)
        for record in report.missing {
            _ = try? index.remove(record.key, if: { $0.version == record.version })
        }
        for record in report.corrupt {
            try FileSystem.rename(path(of: record), "\(quarantine)/\(record.version)")
            _ = try? index.remove(record.key, if: { $0.version == record.version })
        }
        for file in report.unindexed {
            try FileSystem.rename("\(directory)/\(file)", "\(quarantine)/\(file.split(separator: "/").last ?? "")")
        }
        try FileSystem.syncDirectory(quarantine)
    }
}

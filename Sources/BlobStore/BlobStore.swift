import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Limits the store enforces on writes.
public struct BlobStoreOptions: Sendable {
    /// Largest blob accepted, in bytes; nil for no limit.
    public var maxBlobSize: UInt64?
    /// Writes are refused while free space would fall below this many bytes.
    public var minFreeBytes: UInt64

    /// Creates options.
    public init(maxBlobSize: UInt64? = nil, minFreeBytes: UInt64 = 0) {
        self.maxBlobSize = maxBlobSize
        self.minFreeBytes = minFreeBytes
    }
}

/// Blobs in a data directory: `blobs/ab/cd/VERSION` files, `tmp/` for uploads in progress,
/// `index.sqlite` mapping keys to versions, and `lock`.
public final class BlobStore: Sendable {
    /// The data directory.
    public let directory: String
    /// The limits in force.
    public let options: BlobStoreOptions
    let index: any BlobIndex
    let uploadIndex: any UploadIndex
    private let lock: DataDirectoryLock
    let logger: Logger
    /// Uploads with an append (or termination) in progress.
    private let busyUploads = Mutex<Set<String>>([])

    /// Opens the data directory, creating it if needed: takes the lock, removes temp files left
    /// by a crash, opens the index.
    public init(directory: String, options: BlobStoreOptions = .init(),
                logger: Logger = Logger(label: "blobd.store")) throws(StoreError) {
        try FileSystem.makeDirectory(directory)
        self.directory = directory
        self.options = options
        self.logger = logger
        self.lock = try DataDirectoryLock(directory: directory)
        try FileSystem.makeDirectory(directory + "/blobs")
        try FileSystem.makeDirectory(directory + "/tmp")
        try FileSystem.makeDirectory(directory + "/uploads")
        let index = try SQLiteBlobIndex(path: directory + "/index.sqlite")
        self.index = index
        self.uploadIndex = index
        removeTempFiles()
    }

    /// Starts an upload. `expectedSize` (a Content-Length) is checked against the size limit
    /// and free space up front; `expectedSHA256` is checked at commit.
    public func beginWrite(expectedSize: UInt64? = nil, expectedSHA256: [UInt8]? = nil) throws(StoreError) -> BlobWriteStream {
        if let limit = options.maxBlobSize, let expectedSize, expectedSize > limit {
            throw .tooLarge(limit: limit)
        }
        try checkFreeSpace(needed: expectedSize ?? 0)
        let path = "\(directory)/tmp/\(FileSystem.randomID()).part"
        let descriptor = try FileSystem.open(path, O_WRONLY | O_CREAT | O_EXCL, mode: 0o644)
        // Ownership of the descriptor passes to the stream, which closes it.
        return BlobWriteStream(store: self, tempPath: path, descriptor: descriptor,
                               limit: options.maxBlobSize, expectedSHA256: expectedSHA256)
    }

    /// Throws `.insufficientStorage` if writing `needed` bytes would leave less than the minimum free.
    public func checkFreeSpace(needed: UInt64 = 0) throws(StoreError) {
        guard options.minFreeBytes > 0 || needed > 0, let free = FileSystem.freeBytes(at: directory) else { return }
        let (total, overflow) = options.minFreeBytes.addingReportingOverflow(needed)
        if overflow || free < total { throw .insufficientStorage }
    }

    /// Number of blobs and their total size, from the index.
    public func totals() throws(StoreError) -> (count: Int, bytes: UInt64) {
        try index.totals()
    }

    /// Throws when the store cannot take writes: the index does not answer, the data directory
    /// is not writable, or free space is below the minimum.
    public func checkReady() throws(StoreError) {
        _ = try index.record(for: BlobKey("readiness-probe"))
        guard access(directory + "/tmp", W_OK) == 0, access(directory + "/blobs", W_OK) == 0 else {
            throw .io(operation: "access \(directory)", errno: errno)
        }
        try checkFreeSpace()
    }

    /// The current record at `key`.
    public func record(for key: BlobKey) throws(StoreError) -> BlobRecord? {
        try index.record(for: key)
    }

    /// Opens the current version at `key` for reading.
    public func open(_ key: BlobKey) throws(StoreError) -> OpenBlob {
        // A replace or delete can unlink the file between lookup and open: look up again.
        for _ in 0..<8 {
            guard let record = try index.record(for: key) else { throw .notFound }
            let descriptor = Glibc.open(path(of: record), O_RDONLY | O_CLOEXEC)
            if descriptor >= 0 {
                return OpenBlob(record: record, descriptor: descriptor)  // owns the descriptor
            }
            if errno != ENOENT { throw FileSystem.error("open blob", errno) }
        }
        throw .io(operation: "open blob \(key)", errno: ENOENT)
    }

    /// Deletes the blob at `key` if `condition` holds for it; returns the deleted record.
    @discardableResult
    public func delete(_ key: BlobKey, if condition: (BlobRecord) -> Bool = { _ in true }) throws(StoreError) -> BlobRecord {
        let removed = try index.remove(key, if: condition)
        FileSystem.remove(path(of: removed))
        return removed
    }

    /// Up to `limit` records in bytewise key order, starting with `prefix`, after `after`.
    public func list(prefix: [UInt8] = [], after: [UInt8]? = nil, limit: Int) throws(StoreError) -> [BlobRecord] {
        try index.list(prefix: prefix, after: after, limit: limit)
    }

    /// Moves a fsynced file into place and commits it to the index (in the same transaction as
    /// marking `completingUpload` complete, when given).
    func install(file: String, record: BlobRecord, completingUpload: String? = nil,
                 if condition: (BlobRecord?) -> Bool) throws(StoreError) -> StoredBlob {
        let path = path(of: record)
        let folder = String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)])
        try makeFolders(for: folder)
        try FileSystem.rename(file, path)
        do {
            try FileSystem.syncDirectory(folder)
            let outcome = try index.commit(record, completingUpload: completingUpload, if: condition)
            if case .replaced(let previous) = outcome {
                FileSystem.remove(self.path(of: previous))
            }
            return StoredBlob(record: record, created: outcome == .created)
        } catch {
            // An upload's data goes back where it was, so the upload can still complete.
            if completingUpload != nil { try? FileSystem.rename(path, file) } else { FileSystem.remove(path) }
            throw error
        }
    }

    /// Marks an upload busy; false if it already is.
    func claimUpload(_ id: String) -> Bool {
        busyUploads.withLock { $0.insert(id).inserted }
    }

    func releaseUpload(_ id: String) {
        _ = busyUploads.withLock { $0.remove(id) }
    }

    /// The file holding `record`'s version.
    func path(of record: BlobRecord) -> String {
        "\(directory)/blobs/\(record.relativePath)"
    }

    /// Creates `blobs/ab` and `blobs/ab/cd` as needed; a new folder's parent is fsynced so the
    /// folder survives a crash along with the file about to be renamed into it.
    private func makeFolders(for folder: String) throws(StoreError) {
        let parent = String(folder[..<(folder.lastIndex(of: "/") ?? folder.endIndex)])
        if try FileSystem.makeDirectory(parent) { try FileSystem.syncDirectory(directory + "/blobs") }
        if try FileSystem.makeDirectory(folder) { try FileSystem.syncDirectory(parent) }
    }

    private func removeTempFiles() {
        let names = FileSystem.contents(of: directory + "/tmp")
        for name in names { FileSystem.remove("\(directory)/tmp/\(name)") }
        if !names.isEmpty {
            logger.info("Removed temp files of unfinished uploads", metadata: ["count": "\(names.count)"])
        }
    }
}

import Logging
import PostgresClient
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
    /// Unfinished uploads (tus and multipart together) one credential, or in open access one
    /// client address, may have; 0 for no limit.
    public var maxOpenUploads: Int = 1000
    /// For crash tests only: the process kills itself with SIGKILL at this step of a commit.
    public var crashPoint: CrashPoint?
    /// For tests only: seconds every index commit of a new version waits first, so a test can
    /// hold a commit while it probes the server (shutdown, worker threads).
    public var commitDelay: Double = 0
    /// Where the index is: SQLite in the data directory (one node), or PostgreSQL shared by
    /// several nodes whose data directory is one shared file system.
    public var index: IndexLocation = .sqlite
    /// This node's name in a cluster: its pending-write log and lock are under
    /// `nodes/NODE/` of the shared data directory.
    public var nodeID: String = "local"
    /// In a cluster, seconds a replaced or deleted version's file stays before it is unlinked,
    /// so that downloads in flight on other nodes finish (NFS has no open-unlink semantics).
    public var reclaimGrace: Int64 = 900

    public enum IndexLocation: Sendable, Equatable {
        case sqlite
        /// A `postgres://` URL (or libpq key=value string) and the connections per node.
        case postgres(url: String, connections: Int)
    }

    /// True when several nodes share the index and the data directory.
    public var isShared: Bool { index != .sqlite }

    /// Steps of a commit where a crash test can stop the process.
    public enum CrashPoint: String, Sendable, CaseIterable {
        /// The file is written and fsynced; not yet linked into `blobs/` (a completed resumable
        /// upload) or its folder not yet fsynced (a PUT or POST, written in place).
        case beforeLink = "before-link"
        /// The file is in `blobs/`, the index not yet committed.
        case afterLink = "after-link"
        /// The index is committed, the response not yet sent.
        case afterCommit = "after-commit"
    }

    /// Creates options.
    public init(maxBlobSize: UInt64? = nil, minFreeBytes: UInt64 = 0, crashPoint: CrashPoint? = nil, commitDelay: Double = 0) {
        self.maxBlobSize = maxBlobSize
        self.minFreeBytes = minFreeBytes
        self.crashPoint = crashPoint
        self.commitDelay = commitDelay
    }
}

/// Blobs in a data directory: `blobs/ab/VERSION` files, `tmp/pending-N` logs of the versions
/// being written, `index.sqlite` mapping keys to versions, and `lock`. In a cluster the index
/// is PostgreSQL and each node keeps its pending logs and lock in `nodes/NODE/` instead.
public final class BlobStore: Sendable {
    /// The data directory.
    public let directory: String
    /// The limits in force.
    public let options: BlobStoreOptions
    let index: any BlobIndex
    let uploadIndex: any UploadIndex
    /// The S3 dialect's buckets.
    public let buckets: any BucketIndex
    /// The S3 dialect's multipart uploads.
    let multipartIndex: any MultipartIndex
    private let lock: DataDirectoryLock
    /// Space only deletes and the index may use (see `SpaceReserve`).
    let reserve: SpaceReserve
    /// The 256 folders of `blobs/`, open.
    private let blobFolders: BlobFolders
    /// Index rows skipped because their key fails validation (see `InvalidKeyRows`).
    let invalidKeys: InvalidKeyRows
    /// The versions being written, for `recover()`.
    let pending: PendingWrites
    /// This node's own folder: `tmp/` alone, `nodes/NODE/` in a cluster.
    let nodeDirectory: String
    /// The shared index, in a cluster.
    let sharedIndex: PostgresBlobIndex?
    let logger: Logger
    /// Uploads with an append (or termination) in progress, with the request holding each
    /// when a newer one may stop it.
    private let busyUploads = Mutex<[String: ClaimHolder]>([:])
    /// S3 parts being received, by `UPLOAD-NUMBER`.
    let partsInFlight = Mutex<[String: ClaimHolder]>([:])

    /// Opens the data directory, creating it if needed: takes the lock, removes temp files left
    /// by a crash, opens the index.
    public init(directory: String, options: BlobStoreOptions = .init(),
                logger: Logger = Logger(label: "blobd.store")) throws(StoreError) {
        try FileSystem.makeDirectory(directory)
        self.directory = directory
        self.options = options
        self.logger = logger
        // A cluster's data directory opened as a single node's would lose the cluster's blobs to
        // recovery against an empty SQLite index.
        if !options.isShared && access(directory + "/nodes", F_OK) == 0 { throw .dataDirectoryIsShared(path: directory) }
        if options.isShared {
            try FileSystem.makeDirectory(directory + "/nodes")
            nodeDirectory = "\(directory)/nodes/\(options.nodeID)"
        } else {
            nodeDirectory = directory + "/tmp"
        }
        try FileSystem.makeDirectory(nodeDirectory)
        self.lock = try DataDirectoryLock(directory: options.isShared ? nodeDirectory : directory)
        // In a cluster the index is PostgreSQL's, on its own disk: a reserve here would not help it.
        self.reserve = SpaceReserve(path: directory + "/space-reserve", enabled: !options.isShared)
        if !reserve.isHeld { logger.warning("No room for the space reserve: deletes on a full disk may fail") }
        // blobs/ab/: made once here, so a write never creates a folder, and concurrent writes
        // rarely contend for the same folder's lock.
        try FileSystem.makeDirectory(directory + "/blobs")
        var madeFolders = false
        for folder in BlobRecord.folders {
            if try FileSystem.makeDirectory("\(directory)/blobs/\(folder)") { madeFolders = true }
        }
        if madeFolders { try FileSystem.syncDirectory(directory + "/blobs") }
        try FileSystem.makeDirectory(directory + "/tmp")
        try FileSystem.makeDirectory(directory + "/uploads")
        // blobs/ab/, open for the fsync that makes a new link in it durable; closed with the
        // last holder, also if the index fails to open below.
        let blobFolders = try BlobFolders(directory: directory)
        self.blobFolders = blobFolders
        let invalidKeys = InvalidKeyRows(logger: logger)
        self.invalidKeys = invalidKeys
        // A new file's folder entry is made durable once per group commit and folder: the
        // folders follow the clock (see `newVersion`), so a batch usually needs one fsync.
        let syncFolders: @Sendable ([BlobRecord]) throws(StoreError) -> Void = { [directory] records throws(StoreError) in
            for version in Set(records.map { $0.version.prefix(2) }) {
                if let folder = UInt8(version, radix: 16) {
                    try FileSystem.sync(blobFolders.descriptors[Int(folder)])
                } else {
                    try FileSystem.syncDirectory("\(directory)/blobs/\(version)")
                }
            }
        }
        switch options.index {
        case .sqlite:
            // Made here, 0600, so that SQLite's -wal and -shm files, which take the database's
            // mode, are blobd's only too.
            close(try FileSystem.open(directory + "/index.sqlite", O_RDONLY | O_CREAT))
            let index = try SQLiteBlobIndex(path: directory + "/index.sqlite", invalidKeys: invalidKeys, beforeCommit: syncFolders)
            // The record cache is coherent only while this process is the index's one writer.
            self.index = CachedBlobIndex(index)
            self.uploadIndex = index
            self.buckets = index
            self.multipartIndex = index
            self.sharedIndex = nil
        case .postgres(let url, let connections):
            let index = try PostgresBlobIndex(url: url, connections: connections, invalidKeys: invalidKeys, beforeCommit: syncFolders)
            self.index = index
            self.uploadIndex = index
            self.buckets = index
            self.multipartIndex = index
            self.sharedIndex = index
        }
        let leftBehind = PendingWrites.leftBehind(in: nodeDirectory)
        self.pending = PendingWrites(folder: nodeDirectory, first: (leftBehind.last?.log ?? -1) + 1)
        try recover(leftBehind)
        // Without the mark of a clean stop, the last run may have ended in a power cut, which can
        // take pending-log lines with it but leave the files they named. (In a cluster the other
        // nodes' writes in flight look the same, so there fsck finds such orphans instead.)
        if FileSystem.remove(nodeDirectory + "/" + Self.cleanStopMark) {
            try FileSystem.syncDirectory(nodeDirectory)
        } else if !options.isShared {
            try reclaimRecentOrphans()
        }
    }

    /// Left in the data directory by `markStoppedCleanly()`: the last run stopped cleanly.
    static let cleanStopMark = "clean-stop"

    /// Marks the data directory as cleanly stopped: the next start skips the scan for orphans of
    /// a power cut. Call once nothing is being written any more (a write still pending is in the
    /// pending log, which this makes durable first).
    public func markStoppedCleanly() {
        pending.sync()
        do throws(StoreError) {
            let descriptor = try FileSystem.open(nodeDirectory + "/" + Self.cleanStopMark, O_WRONLY | O_CREAT | O_TRUNC)
            defer { close(descriptor) }
            try FileSystem.sync(descriptor)
            try FileSystem.syncDirectory(directory + "/tmp")
        } catch {
            // The next start then looks for orphans of a power cut, which finds none.
            logger.warning("Cannot mark the stop as clean", metadata: ["error": "\(error)"])
        }
    }

    /// The largest size a client may declare (Content-Length, Upload-Length): `--max-blob-size`,
    /// and never past what a file and the index can hold (a signed 64-bit integer).
    var sizeLimit: UInt64 { min(options.maxBlobSize ?? .max, UInt64(Int64.max)) }

    /// Starts an upload. `expectedSize` (a Content-Length) is checked against the size limit
    /// and free space up front; `expectedSHA256` is checked at commit. `hasher`: computes the
    /// SHA-256 (and what else it was asked for) instead of the stream, as it writes.
    public func beginWrite(expectedSize: UInt64? = nil, expectedSHA256: [UInt8]? = nil,
                           hasher: BodyHasher? = nil) throws(StoreError) -> BlobWriteStream {
        if let expectedSize, expectedSize > sizeLimit { throw .tooLarge(limit: sizeLimit) }
        try checkFreeSpace(needed: expectedSize ?? 0)
        // The file is written at its final path in blobs/ (invisible until the index names it),
        // so its fsync also makes its folder entry durable. Its version is logged as pending
        // first: after a crash `recover()` removes the file unless the index has it.
        let version = Self.newVersion()
        let entry = try pending.add(version)
        let descriptor: Int32
        do {
            descriptor = try FileSystem.open(path(ofVersion: version), O_WRONLY | O_CREAT | O_EXCL)
        } catch {
            pending.forget(entry)
            throw error
        }
        // Ownership of the descriptor passes to the stream, which closes it.
        return BlobWriteStream(store: self, version: version, pending: entry, descriptor: descriptor,
                               expectedSize: expectedSize, limit: options.maxBlobSize, expectedSHA256: expectedSHA256, hasher: hasher)
    }

    /// A new version name: 32 hex digits whose first two, the `ab` folder, follow the clock (they
    /// change every 16 s) and the rest random. Uploads close in time then share a folder, so
    /// their fsyncs write the same directory and inode-table blocks instead of one set per
    /// upload; over an hour and more the folders fill evenly.
    static func newVersion() -> String {
        hex([UInt8(truncatingIfNeeded: time(nil) / 16)]) + FileSystem.randomID().dropFirst(2)
    }

    /// Number of blobs and their total size, from the index.
    public func totals() throws(StoreError) -> (count: Int, bytes: UInt64) {
        try index.totals()
    }

    /// Throws when the store cannot take writes: the index does not answer, the data directory
    /// is not writable, or free space is below the minimum.
    public func checkReady() throws(StoreError) {
        // A query that passes the record cache, so the index itself must answer.
        _ = try index.containsVersion("")
        guard access(nodeDirectory, W_OK) == 0, access(directory + "/blobs", W_OK) == 0 else {
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
            if let blob = try open(file: record) { return blob }
        }
        throw .io(operation: "open blob \(key)", errno: ENOENT)
    }

    /// Looks the blob at `key` up without holding the calling thread while the index answers:
    /// `completion` gets the record on whichever thread read it, and must not block. Open the
    /// blob with `open(_:found:)`.
    public func lookUp(_ key: BlobKey, then completion: @escaping @Sendable (Result<BlobRecord?, StoreError>) -> Void) {
        index.record(for: key, then: completion)
    }

    /// Opens the blob `lookUp` found at `key` (or throws `.notFound`); if its file has been
    /// replaced since, the current version.
    public func open(_ key: BlobKey, found: BlobRecord?) throws(StoreError) -> OpenBlob {
        guard let found else { throw .notFound }
        if let blob = try open(file: found) { return blob }
        return try open(key)
    }

    /// The blob of `record`, or nil if its file is gone (replaced or deleted since the lookup).
    private func open(file record: BlobRecord) throws(StoreError) -> OpenBlob? {
        let descriptor = FileSystem.interruptible { Glibc.open(path(of: record), O_RDONLY | O_CLOEXEC) }
        guard descriptor >= 0 else {
            if errno != ENOENT { throw FileSystem.error("open blob", errno) }
            return nil
        }
        return OpenBlob(record: record, descriptor: descriptor)  // owns the descriptor
    }

    /// Deletes the blob at `key` if `condition` holds for it; returns the deleted record. On a
    /// full disk the space reserve is given up for it (see `SpaceReserve`).
    @discardableResult
    public func delete(_ key: BlobKey, if condition: (BlobRecord) -> Bool = { _ in true }) throws(StoreError) -> BlobRecord {
        let removed: BlobRecord
        do {
            removed = try index.remove(key, if: condition)
        } catch {
            guard error == .insufficientStorage || error == .index(.full), reserve.release() else { throw error }
            logger.warning("The disk is full: the space reserve went to a delete; writes wait until there is room for it again")
            removed = try index.remove(key, if: condition)
        }
        discard(removed.version)
        return removed
    }

    /// Up to `limit` records in bytewise key order, starting with `prefix`, after `after`.
    public func list(prefix: [UInt8] = [], after: [UInt8]? = nil, limit: Int) throws(StoreError) -> [BlobRecord] {
        try index.list(prefix: prefix, after: after, limit: limit)
    }

    /// Puts a fsynced file in place and commits it to the index (in the same transaction as
    /// marking `completingUpload` complete, when given).
    ///
    /// The file is hard-linked into `blobs/`, then committed as in `commitWritten`; its original
    /// name (`uploads/VERSION`) stays until the commit, so after a crash `recover()` knows which
    /// link to undo.
    func install(file: String, record: BlobRecord, completingUpload: String? = nil,
                 if condition: (BlobRecord?) -> Bool) throws(StoreError) -> StoredBlob {
        crash(at: .beforeLink)
        try FileSystem.link(file, path(of: record))
        return try withoutActuallyEscaping(condition) { condition throws(StoreError) in
            try waitFor { commit(record, completingUpload: completingUpload, uncommitted: .file(file), if: condition, then: $0) }
        }
    }

    /// Commits a fsynced file written at its place in `blobs/` (see `beginWrite`); its `pending`
    /// entry is forgotten once the commit is durable. `completion` as in `BlobIndex.commit`.
    func commitWritten(_ record: BlobRecord, pending entry: PendingWrites.Entry, if condition: @escaping (BlobRecord?) -> Bool,
                       then completion: @escaping (Result<StoredBlob, StoreError>) -> Void) {
        crash(at: .beforeLink)
        commit(record, completingUpload: nil, uncommitted: .pending(entry), if: condition, then: completion)
    }

    /// What tells `recover()` that a file in `blobs/` may not be committed: a pending entry, or
    /// (for a completed resumable upload) the upload's own file.
    private enum UncommittedMark {
        case pending(PendingWrites.Entry)
        case file(String)
    }

    /// Commits the index (which fsyncs the file's folder first, and the WAL), and only then drops
    /// the `uncommitted` mark. On failure the file leaves `blobs/`.
    private func commit(_ record: BlobRecord, completingUpload: String?, uncommitted: UncommittedMark,
                        if condition: @escaping (BlobRecord?) -> Bool,
                        then completion: @escaping (Result<StoredBlob, StoreError>) -> Void) {
        // A content-addressed key holds only the bytes it names: no write can poison it in
        // advance (a PUT, a tus upload naming it, or anything else that commits).
        if let address = record.key.contentAddress, address != record.sha256 {
            FileSystem.remove(path(of: record))
            completion(.failure(.keyNotContentDigest(actual: record.sha256)))
            return
        }
        crash(at: .afterLink)
        if options.commitDelay > 0 { usleep(UInt32(min(options.commitDelay, 60) * 1_000_000)) }
        // The index fsyncs the file's folder before the transaction (see `init`).
        index.commit(record, completingUpload: completingUpload, if: condition) { [self] result in
            switch result {
            case .failure(let error):
                FileSystem.remove(path(of: record))
                completion(.failure(error))
            case .success(let outcome):
                crash(at: .afterCommit)
                switch uncommitted {
                case .pending(let entry): pending.forget(entry)
                case .file(let path): FileSystem.remove(path)
                }
                if case .replaced(let previous) = outcome {
                    discard(previous.version)
                }
                completion(.success(StoredBlob(record: record, created: outcome == .created)))
            }
        }
    }

    /// Unlinks the file of a version the index no longer names. Readers that opened it keep
    /// reading; the index forgets it as garbage with its next write. In a cluster the file stays
    /// for the grace period instead (`reclaimGarbage`): a download on another node may be
    /// reading it, and NFS, say, would cut it off.
    private func discard(_ version: String) {
        guard !options.isShared else { return }
        FileSystem.remove(path(ofVersion: version))
        index.collectedGarbage(version)
    }

    /// In a cluster: unlinks the files of versions replaced or deleted more than the grace
    /// period ago, if no other node is doing it now. Returns how many went.
    @discardableResult
    public func reclaimGarbage(limit: Int = 1000) -> Int {
        guard let sharedIndex else { return 0 }
        do {
            return try sharedIndex.reclaim(olderThan: options.reclaimGrace, limit: limit) { version in
                FileSystem.remove(path(ofVersion: version))
            }
        } catch {
            logger.warning("Reclaiming replaced versions failed", metadata: ["error": "\(error)"])
            return 0
        }
    }


    private func crash(at point: BlobStoreOptions.CrashPoint) {
        if options.crashPoint == point { kill(getpid(), SIGKILL) }
    }

    /// Undoes what a crash interrupted, without reading any blob: a version in a pending log
    /// `leftBehind` that the index does not name was never acknowledged, so its file in `blobs/`
    /// goes; the same for an unfinished upload's completion link. (The `tmp/ab/VERSION` markers
    /// and `VERSION.part` temp files of earlier releases are handled the same way.)
    private func recover(_ leftBehind: [(log: Int, versions: [String])]) throws(StoreError) {
        var removed = 0
        func removeUncommitted(_ version: String) throws(StoreError) {
            // A version committed and since replaced is garbage, not uncommitted: in a cluster
            // its file stays for the grace period.
            guard try !index.containsVersion(version), try !(sharedIndex?.isGarbage(version) ?? false) else { return }
            if FileSystem.remove(path(ofVersion: version)) { removed += 1 }
        }
        for (log, versions) in leftBehind {
            for version in versions { try removeUncommitted(version) }
            FileSystem.remove(PendingWrites.path(nodeDirectory, log))
        }
        // In a cluster, nothing else here is this node's alone: other nodes may be completing
        // uploads, and replaced versions wait out their grace period (`reclaimGarbage`).
        if options.isShared {
            if removed > 0 { logger.info("Removed files of unfinished uploads", metadata: ["count": "\(removed)"]) }
            return
        }
        // Earlier releases' tmp/ab/ folders, where they exist.
        for folder in FileSystem.contents(of: directory + "/tmp") where folder.count == 2 {
            for name in FileSystem.contents(of: "\(directory)/tmp/\(folder)") {
                try removeUncommitted(name.hasSuffix(".part") ? String(name.dropLast(5)) : name)
                FileSystem.remove("\(directory)/tmp/\(folder)/\(name)")
            }
        }
        for id in try uploadIndex.unfinishedUploads() where try !index.containsVersion(id) {
            FileSystem.remove(path(ofVersion: id))
        }
        // Replaced or deleted versions whose unlink a crash may have cut off.
        for version in try index.garbage() where try !index.containsVersion(version) {
            FileSystem.remove(path(ofVersion: version))
        }
        try index.clearGarbage()
        if removed > 0 {
            logger.info("Removed files of unfinished uploads", metadata: ["count": "\(removed)"])
        }
    }

    /// Seconds before the newest change to a `blobs/` folder within which other folders are
    /// scanned for orphans after an unclean stop.
    ///
    /// A power cut can lose the last seconds of pending-log appends (they are not fsynced; the
    /// kernel writes dirty pages back within about 30 s), but not the files they named if those
    /// reached the disk. Those files were created in the last half minute or so before the
    /// cut, and a folder's mtime changes with every file created in it. So the folders changed
    /// within this window of the newest change hold every such orphan; with a new folder every
    /// 16 s that is about 20 of the 256, whatever the number of blobs.
    static let orphanWindow: Int = 300

    /// Removes the files in recently changed `blobs/` folders that the index does not name. Run
    /// at start after an unclean stop, when nothing is being written.
    private func reclaimRecentOrphans() throws(StoreError) {
        var changed: [(folder: Int, seconds: Int)] = []
        for (folder, descriptor) in blobFolders.descriptors.enumerated() {
            if let status = FileSystem.status(descriptor) { changed.append((folder, Int(status.st_mtim.tv_sec))) }
        }
        guard let newest = changed.map(\.seconds).max() else { return }
        var removed = 0
        for (folder, seconds) in changed where seconds >= newest - Self.orphanWindow {
            let name = BlobRecord.folders[folder]
            let files = FileSystem.contents(of: "\(directory)/blobs/\(name)")
            guard !files.isEmpty else { continue }
            let indexed = try index.versions(inFolder: name)
            for file in files where !indexed.contains(file) {
                if FileSystem.remove("\(directory)/blobs/\(name)/\(file)") { removed += 1 }
            }
        }
        if removed > 0 {
            logger.info("Removed files of uploads a power cut interrupted", metadata: ["count": "\(removed)"])
        }
    }

    /// Seconds a cluster node's claim on an upload lasts unless renewed (`renewUploadClaim`).
    static let claimLease: Int64 = 120

    /// Marks an upload busy; false if it already is, here or (in a cluster) on another node.
    /// `preempting`: a request holding it on this node is stopped first (see `Preemptible`).
    func claimUpload(_ id: String, preempting: Bool = false) throws(StoreError) -> Bool {
        if try claimOnce(id) { return true }
        guard preempting, let holder = busyUploads.withLock({ $0[id]?.request }) else { return false }
        holder.preempt()
        return try claimOnce(id)
    }

    private func claimOnce(_ id: String) throws(StoreError) -> Bool {
        let claimed = busyUploads.withLock { claims in
            guard claims[id] == nil else { return false }
            claims[id] = ClaimHolder()
            return true
        }
        guard claimed else { return false }
        guard let sharedIndex else { return true }
        do throws(StoreError) {
            if try sharedIndex.claimUpload(id, node: options.nodeID, until: Int64(time(nil)) + Self.claimLease) { return true }
        } catch {
            _ = busyUploads.withLock { $0.removeValue(forKey: id) }
            throw error
        }
        _ = busyUploads.withLock { $0.removeValue(forKey: id) }
        return false
    }

    /// Names the request that holds the claim on upload `id`, so a newer one can stop it.
    func holdUpload(_ id: String, by request: any Preemptible) {
        busyUploads.withLock { $0[id]?.request = request }
    }

    /// Stops the request holding upload `id` on this node, if any (a HEAD does, as in tusd).
    func preemptUpload(_ id: String) {
        busyUploads.withLock { $0[id]?.request }?.preempt()
    }

    /// Extends this node's claim on an upload it is appending to (a long PATCH).
    func renewUploadClaim(_ id: String) {
        do throws(StoreError) {
            _ = try sharedIndex?.claimUpload(id, node: options.nodeID, until: Int64(time(nil)) + Self.claimLease)
        } catch {
            // The claim lapses at its lease's end; another node may then take the upload over.
            logger.warning("Cannot renew an upload's claim", metadata: ["upload.id": "\(id)", "error": "\(error)"])
        }
    }

    func releaseUpload(_ id: String) {
        sharedIndex?.releaseUpload(id, node: options.nodeID)
        _ = busyUploads.withLock { $0.removeValue(forKey: id) }
    }

    /// The file holding `record`'s version.
    func path(of record: BlobRecord) -> String {
        path(ofVersion: record.version)
    }

    func path(ofVersion version: String) -> String {
        "\(directory)/blobs/\(BlobRecord.relativePath(of: version))"
    }


}

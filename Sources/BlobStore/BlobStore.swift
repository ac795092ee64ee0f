import BlobCatalog
import BlobContent
import BlobCore
import BucketSettings
import Logging

import Synchronization

import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// Blobs in a data directory: `blobs/ab/VERSION` files, `tmp/pending-N` logs of the versions
/// being written, `index.sqlite` mapping keys to versions, and `lock`. In a cluster the index
/// is PostgreSQL and each node keeps its pending logs and lock in `nodes/NODE/` instead.
public final class BlobStore: Sendable {
    /// The data directory.
    public let directory: String
    /// The limits in force.
    public let options: BlobStoreOptions
    /// The catalog the store was opened with (`migrate-index` reads it whole).
    public let catalog: Catalog
    /// The buckets' settings: the one way they are written, and the table writes and reads ask.
    public let settings: BucketSettingsService
    let index: any BlobIndex
    /// Concurrent commits into `index`, one transaction a batch; each batch first fsyncs the
    /// folders of its files (`folderSync`).
    let commits: GroupCommit
    let uploadIndex: any UploadIndex
    /// The S3 dialect's buckets.
    public let buckets: any BucketIndex
    /// The S3 dialect's multipart uploads.
    let multipartIndex: any MultipartIndex
    private let lock: DataDirectoryLock
    /// Space only deletes and the index may use (see `SpaceReserve`).
    let reserve: SpaceReserve
    /// The 256 folders of `blobs/`, open, in `BlobRecord.folders` order.
    let blobFolders: BlobFolders
    /// Index rows skipped because their key fails validation (see `InvalidKeyRows`).
    let invalidKeys: InvalidKeyRows
    /// The versions being written, for `recover()`.
    let pending: PendingWrites
    /// This node's own folder: `tmp/` alone, `nodes/NODE/` in a cluster.
    let nodeDirectory: String
    /// What this node keeps beside the catalog: garbage, and in a cluster upload claims.
    let node: NodeBookkeeping
    let logger: Logger
    /// Uploads with an append (or termination) in progress, with the request holding each
    /// when a newer one may stop it.
    let busyUploads = Mutex<[String: ClaimHolder]>([:])
    /// S3 parts being received, by `UPLOAD-NUMBER`.
    let partsInFlight = Mutex<[String: ClaimHolder]>([:])
    /// Where the store's own background work runs (a bucket's expiry restamp after its lifecycle
    /// rules change): one thread, which the node stops with its other services.
    public let background = BlockingPool(name: "blobd-restamp", threads: 1)
    /// The `LifecycleExpiration:Delete` event of a blob the sweep removes, if a subscription wants one.
    let expiryEvents = Mutex<(@Sendable (String, BlobKey) -> EventDraft?)?>(nil)

    /// Opens the data directory, creating it if needed: takes the lock, removes temp files left
    /// by a crash, opens the catalog `catalog` (which the executable chose).
    public init(directory: String, catalog opener: CatalogOpener, options: BlobStoreOptions = .init(),
                logger: Logger = Logger(label: "blobd.store")) throws(StoreError) {
        try FileSystem.makeDirectory(directory)
        self.directory = directory
        self.options = options
        self.logger = logger
        nodeDirectory = try Self.makeNodeDirectory(in: directory, shared: opener.isShared, nodeID: options.nodeID)
        self.lock = try DataDirectoryLock(directory: opener.isShared ? nodeDirectory : directory)
        // In a cluster the index is PostgreSQL's, on its own disk: a reserve here would not help it.
        self.reserve = SpaceReserve(path: directory + "/space-reserve", enabled: !opener.isShared)
        if !reserve.isHeld { logger.warning("No room for the space reserve: deletes on a full disk may fail") }
        try Self.makeFolders(in: directory)
        // blobs/ab/, open for the fsync that makes a new link in it durable; closed with the
        // last holder, also if the catalog fails to open below.
        let blobFolders = try BlobFolders(directory: directory)
        self.blobFolders = blobFolders
        let invalidKeys = InvalidKeyRows(logger: logger)
        self.invalidKeys = invalidKeys
        let catalog = try opener.open(CatalogContext(directory: directory, invalidKeys: invalidKeys, clock: options.clock))
        self.catalog = catalog
        self.index = catalog.blobs
        self.commits = GroupCommit(catalog.blobs, clock: options.clock, beforeBatch: Self.folderSync(blobFolders, in: directory))
        self.uploadIndex = catalog.uploads
        self.buckets = catalog.buckets
        self.multipartIndex = catalog.multipart
        self.node = catalog.node
        let leftBehind = PendingWrites.leftBehind(in: nodeDirectory)
        self.pending = PendingWrites(folder: nodeDirectory, first: (leftBehind.last?.log ?? -1) + 1)
        let owner = LaterStore()
        self.settings = BucketSettingsService(access: catalog.access, buckets: catalog.buckets, logger: logger) { bucket in
            owner.store?.restampExpiryInBackground(bucket: bucket)
        }
        owner.set(self)
        try recover(leftBehind)
        try reclaimOrphansUnlessStoppedCleanly()
        try settings.reload()
    }

    /// The time of day, in seconds since the epoch, from the store's clock (`options.clock`).
    public func now() -> Int64 { options.clock.seconds }

    /// blobs/ab/: made once here, so a write never creates a folder, and concurrent writes
    /// rarely contend for the same folder's lock.
    private static func makeFolders(in directory: String) throws(StoreError) {
        try FileSystem.makeDirectory(directory + "/blobs")
        var madeFolders = false
        for folder in BlobRecord.folders {
            if try FileSystem.makeDirectory("\(directory)/blobs/\(folder)") { madeFolders = true }
        }
        if madeFolders { try FileSystem.syncDirectory(directory + "/blobs") }
        try FileSystem.makeDirectory(directory + "/tmp")
        try FileSystem.makeDirectory(directory + "/uploads")
    }

    /// What runs before each batch of commits: a new file's folder entry is made durable once per
    /// batch and folder. The folders follow the clock (see `newVersion`), so a batch usually
    /// needs one fsync.
    private static func folderSync(_ blobFolders: BlobFolders, in directory: String)
        -> @Sendable ([BlobRecord]) throws(StoreError) -> Void {
        { records throws(StoreError) in
            for version in Set(records.map { $0.version.prefix(2) }) {
                if let folder = UInt8(version, radix: 16) {
                    try FileSystem.sync(blobFolders.descriptors[Int(folder)])
                } else {
                    try FileSystem.syncDirectory("\(directory)/blobs/\(version)")
                }
            }
        }
    }

    /// True when several nodes share the catalog and the data directory.
    public var isShared: Bool { shared != nil }

    /// The catalog's bookkeeping of a cluster node; nil on a single node.
    var shared: (any SharedBookkeeping)? {
        if case .shared(let bookkeeping) = node { return bookkeeping }
        return nil
    }

    /// This node's own folder, made if needed: `tmp/` alone, `nodes/NODE/` in a cluster.
    private static func makeNodeDirectory(in directory: String, shared: Bool, nodeID: String) throws(StoreError) -> String {
        // A cluster's data directory opened as a single node's would lose the cluster's blobs to
        // recovery against an empty SQLite index.
        if !shared && FileSystem.isAccessible(directory + "/nodes") { throw .dataDirectoryIsShared(path: directory) }
        let nodeDirectory: String
        if shared {
            try FileSystem.makeDirectory(directory + "/nodes")
            nodeDirectory = "\(directory)/nodes/\(nodeID)"
        } else {
            nodeDirectory = directory + "/tmp"
        }
        try FileSystem.makeDirectory(nodeDirectory)
        return nodeDirectory
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
        let descriptor: FileDescriptor
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
        guard FileSystem.isAccessible(nodeDirectory, W_OK), FileSystem.isAccessible(directory + "/blobs", W_OK) else {
            throw .io(operation: "access \(directory)", errno: errno)
        }
        try checkFreeSpace()
    }

    /// The current record at `key`.
    public func record(for key: BlobKey) throws(StoreError) -> BlobRecord? {
        try index.record(for: key).flatMap(visible)
    }

    /// Opens the current version at `key` for reading.
    public func open(_ key: BlobKey) throws(StoreError) -> OpenBlob {
        // A replace or delete can unlink the file between lookup and open: look up again.
        for _ in 0..<8 {
            guard let record = try index.record(for: key).flatMap(visible) else { throw .notFound }
            if let blob = try open(file: record) { return blob }
        }
        throw .io(operation: "open blob \(key)", errno: ENOENT)
    }

    /// Looks the blob at `key` up without holding the calling thread while the index answers:
    /// `completion` gets the record on whichever thread read it, and must not block. Open the
    /// blob with `open(_:found:)`.
    public func lookUp(_ key: BlobKey, then completion: @escaping @Sendable (Result<BlobRecord?, StoreError>) -> Void) {
        index.record(for: key) { [self] result in completion(result.map { $0.flatMap(visible) }) }
    }

    /// Opens the blob `lookUp` found at `key` (or throws `.notFound`); if its file has been
    /// replaced since, the current version.
    public func open(_ key: BlobKey, found: BlobRecord?) throws(StoreError) -> OpenBlob {
        guard let found else { throw .notFound }
        if let blob = try open(file: found) { return blob }
        return try open(key)
    }

    /// The blob of `record`, or nil if its file is gone (replaced or deleted since the lookup).
    func open(file record: BlobRecord) throws(StoreError) -> OpenBlob? {
        guard let descriptor = try FileSystem.openIfExists(path(of: record)) else { return nil }
        return OpenBlob(record: record, descriptor: descriptor)  // owns the descriptor
    }

    /// Deletes the blob at `key` if `condition` holds for it; returns the deleted record. On a
    /// full disk the space reserve is given up for it (see `SpaceReserve`).
    @discardableResult
    public func delete(_ key: BlobKey, if condition: WriteCondition = .always, events: EventDraft? = nil) throws(StoreError) -> BlobRecord {
        let removed: BlobRecord
        do {
            removed = try index.remove(key, if: condition, events: events)
        } catch {
            guard error == .insufficientStorage || error == .index(.full), reserve.release() else { throw error }
            logger.warning("The disk is full: the space reserve went to a delete; writes wait until there is room for it again")
            removed = try index.remove(key, if: condition, events: events)
        }
        discard(removed.version)
        // A blob past its deadline was gone already for every reader: its delete finds nothing.
        guard visible(removed) != nil else { throw .notFound }
        return removed
    }

    /// Up to `limit` records in bytewise key order, starting with `prefix`, after `after`.
    public func list(prefix: [UInt8] = [], after: [UInt8]? = nil, limit: Int) throws(StoreError) -> [BlobRecord] {
        // Blobs past their deadline are left out, and the page filled from further on.
        try InvalidKeyRows.fill(limit: limit, after: after, rows: { (after, count) throws(StoreError) in
            try index.list(prefix: prefix, after: after, limit: count)
        }, key: { $0.key.bytes }, record: visible)
    }

    /// Puts a fsynced file in place and commits it to the index (in the same transaction as
    /// marking `completingUpload` complete, when given).
    ///
    /// The file is hard-linked into `blobs/`, then committed as in `commitWritten`; its original
    /// name (`uploads/VERSION`) stays until the commit, so after a crash `recover()` knows which
    /// link to undo.
    func install(file: String, record: BlobRecord, completingUpload: String? = nil,
                 if condition: WriteCondition, events: EventDraft? = nil) throws(StoreError) -> StoredBlob {
        reached(.beforeLink)
        try FileSystem.link(file, path(of: record))
        return try waitFor { commit(record, completingUpload: completingUpload, uncommitted: .file(file), if: condition, events: events, then: $0) }
    }

    /// Commits a fsynced file written at its place in `blobs/` (see `beginWrite`); its `pending`
    /// entry is forgotten once the commit is durable. `completion` as in `GroupCommit.commit`.
    func commitWritten(_ record: BlobRecord, pending entry: PendingWrites.Entry, if condition: WriteCondition,
                       events: EventDraft? = nil, then completion: @escaping (Result<StoredBlob, StoreError>) -> Void) {
        reached(.beforeLink)
        commit(record, completingUpload: nil, uncommitted: .pending(entry), if: condition, events: events, then: completion)
    }

    /// What tells `recover()` that a file in `blobs/` may not be committed: a pending entry, or
    /// (for a completed resumable upload) the upload's own file.
    private enum UncommittedMark {
        case pending(PendingWrites.Entry)
        case file(String)
    }

    /// Commits the index through the group commit (which fsyncs the file's folder first), and
    /// only then drops the `uncommitted` mark. On failure the file leaves `blobs/`.
    private func commit(_ unstamped: BlobRecord, completingUpload: String?, uncommitted: UncommittedMark,
                        if condition: WriteCondition, events: EventDraft?,
                        then completion: @escaping (Result<StoredBlob, StoreError>) -> Void) {
        // The sweep finds the blob by this deadline (its own, or its bucket's rules').
        var record = stamped(unstamped)
        // A content-addressed key holds only the bytes it names: no write can poison it in
        // advance (a PUT, a tus upload naming it, or anything else that commits).
        if let address = record.key.contentAddress, address != record.sha256 {
            FileSystem.remove(path(of: record))
            completion(.failure(.keyNotContentDigest(actual: record.sha256)))
            return
        }
        reached(.afterLink)
        // Every dialect's writes follow the bucket's versioning; a version written while it is
        // enabled has an id, else it is `null`.
        var condition = condition
        if condition.versioning == .unversioned { condition.versioning = versioning(of: record.key) }
        if condition.versioning != .unversioned { condition.noncurrentDays = noncurrentDays(of: record.key) }
        record.versioned = condition.versioning == .enabled
        // A new version is locked by the same commit: its bucket's default retention, or the one it asked for.
        if record.versioned { record.lock = lock(of: record, asked: condition.newLock) }
        // The group commit fsyncs the file's folder before the transaction (see `init`).
        commits.commit(record, completingUpload: completingUpload, if: condition, events: events) { [self] result in
            switch result {
            case .failure(let error):
                FileSystem.remove(path(of: record))
                completion(.failure(error))
            case .success(let outcome):
                reached(.afterCommit)
                switch uncommitted {
                case .pending(let entry): pending.forget(entry)
                case .file(let path): FileSystem.remove(path)
                }
                // A versioned bucket keeps the version replaced (see `BucketVersioning.keeps`).
                if case .replaced(let previous) = outcome, !condition.versioning.keeps(previous) {
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
    func discard(_ version: String) {
        guard case .solo(let bookkeeping) = node else { return }
        FileSystem.remove(path(ofVersion: version))
        bookkeeping.collectedGarbage(version)
    }

    private func reached(_ step: CommitStep) {
        options.commitHooks?.reached(step)
    }

    /// The file holding `record`'s version.
    func path(of record: BlobRecord) -> String {
        path(ofVersion: record.version)
    }

    func path(ofVersion version: String) -> String {
        "\(directory)/blobs/\(BlobRecord.relativePath(of: version))"
    }
}

/// The store, for what is made before it and calls it later (its settings restamp through it);
/// weak, so that it does not keep the store alive.
final class LaterStore: Sendable {
    private struct Reference {
        weak var store: BlobStore?
    }

    private let reference = Mutex(Reference())

    func set(_ store: BlobStore) {
        reference.withLock { $0.store = store }
    }

    var store: BlobStore? { reference.withLock { $0.store } }
}

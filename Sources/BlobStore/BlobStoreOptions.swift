import BlobCatalog
import BlobContent
import BlobCore
import Foundation

/// Limits the store enforces on writes.
public struct BlobStoreOptions: Sendable {
    /// Largest blob accepted, in bytes; nil for no limit.
    public var maxBlobSize: UInt64?
    /// Writes are refused while free space would fall below this many bytes.
    public var minFreeBytes: UInt64
    /// Unfinished uploads (tus and multipart together) one credential, or in open access one
    /// client address, may have; 0 for no limit.
    public var maxOpenUploads: Int = 1000
    /// Told each step of a commit; nil in production. Only the tests' build of blobd sets it
    /// (to crash or hold a commit at a step), so the write path itself carries no test code.
    public var commitHooks: CommitHooks?
    /// This node's name in a cluster: its pending-write log and lock are under
    /// `nodes/NODE/` of the shared data directory.
    public var nodeID: String = "local"
    /// In a cluster, seconds a replaced or deleted version's file stays before it is unlinked,
    /// so that downloads in flight on other nodes finish (NFS has no open-unlink semantics).
    public var reclaimGrace: Int64 = 900
    /// Seconds an unfinished upload (tus or multipart) may sit idle (`--upload-expiry`).
    public var uploadExpiry: Int64 = 24 * 3600
    /// Where the store and its catalog read the time of day (a test hands in a `ManualClock`'s).
    public var clock: WallClock = .system

    /// Creates options.
    public init(maxBlobSize: UInt64? = nil, minFreeBytes: UInt64 = 0) {
        self.maxBlobSize = maxBlobSize
        self.minFreeBytes = minFreeBytes
    }
}

/// What the store tells of each step of a commit, for tests that crash or hold the process
/// there (`BlobStoreOptions.commitHooks`).
public struct CommitHooks: Sendable {
    /// Called on the committing thread when a commit reaches a step.
    public let reached: @Sendable (CommitStep) -> Void

    public init(reached: @escaping @Sendable (CommitStep) -> Void) {
        self.reached = reached
    }
}

/// Steps of a commit that `CommitHooks` are told of.
public enum CommitStep: String, Sendable, CaseIterable {
    /// The file is written and fsynced; not yet linked into `blobs/` (a completed resumable
    /// upload) or its folder not yet fsynced (a PUT or POST, written in place).
    case beforeLink = "before-link"
    /// The file is in `blobs/`, the index not yet committed.
    case afterLink = "after-link"
    /// The index is committed, the response not yet sent.
    case afterCommit = "after-commit"
}

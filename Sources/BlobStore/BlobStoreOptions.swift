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
    /// For crash tests only: the process kills itself with SIGKILL at this step of a commit.
    public var crashPoint: CrashPoint?
    /// For tests only: seconds every index commit of a new version waits first, so a test can
    /// hold a commit while it probes the server (shutdown, worker threads).
    public var commitDelay: Double = 0
    /// This node's name in a cluster: its pending-write log and lock are under
    /// `nodes/NODE/` of the shared data directory.
    public var nodeID: String = "local"
    /// In a cluster, seconds a replaced or deleted version's file stays before it is unlinked,
    /// so that downloads in flight on other nodes finish (NFS has no open-unlink semantics).
    public var reclaimGrace: Int64 = 900

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

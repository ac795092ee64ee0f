import BlobCore

/// What a node keeps for itself beside the catalog the nodes share: the garbage of replaced and
/// deleted versions (whose files it unlinks) and, in a cluster, its claims on uploads. Kept
/// apart from `BlobIndex`, because the two kinds of catalog handle it differently, and neither
/// has anything to do for the other's requirements.
public enum NodeBookkeeping: Sendable {
    /// This node is the catalog's one user: a replaced version's file goes at once.
    case solo(any SoloBookkeeping)
    /// Several nodes share the catalog and the data directory: a replaced version's file stays
    /// for a grace period, and an upload is claimed across nodes.
    case shared(any SharedBookkeeping)
}

/// The garbage of a catalog that one node alone uses (SQLite in its data directory).
public protocol SoloBookkeeping: Sendable {
    /// Versions replaced or removed whose files may still exist. A commit or removal adds the
    /// old version in its own transaction, so a crash before the file is unlinked is repaired
    /// at start-up.
    func garbage() throws(StoreError) -> [String]
    /// The file of a garbage version is gone; its row can go with the next write.
    func collectedGarbage(_ version: String)
    /// Forgets every garbage version (after start-up removed their files).
    func clearGarbage() throws(StoreError)
}

/// The garbage and upload claims of a catalog shared by several nodes (PostgreSQL). A garbage
/// row goes only once `reclaim` unlinked its file after the grace period: one node's start
/// never forgets garbage that is the cluster's.
public protocol SharedBookkeeping: Sendable {
    /// Every version waiting to be reclaimed, whatever its age.
    func garbage() throws(StoreError) -> [String]
    /// True if `version` was replaced or deleted and waits out its grace period.
    func isGarbage(_ version: String) throws(StoreError) -> Bool
    /// Versions replaced or removed at least `grace` seconds ago, up to `limit`, unless another
    /// node is reclaiming now; `remove` unlinks each file, after which its row goes. Returns
    /// how many were reclaimed.
    func reclaim(olderThan grace: Int64, limit: Int, remove: (String) -> Void) throws(StoreError) -> Int
    /// Claims upload `id` for `node` until `until` (seconds since the epoch); false if another
    /// node holds an unexpired claim. Renews this node's own claim.
    func claimUpload(_ id: String, node: String, until: Int64) throws(StoreError) -> Bool
    /// Gives up `node`'s claim on upload `id` (a failure only lets the claim lapse).
    func releaseUpload(_ id: String, node: String)
}

import BlobCatalog
import BlobContent
import BlobCore
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Claims on uploads being appended to: one request at a time per upload, on this node and (in a
/// cluster) across nodes; a newer request may stop the one holding it.
extension BlobStore {
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

    func claimOnce(_ id: String) throws(StoreError) -> Bool {
        let claimed = busyUploads.withLock { claims in
            guard claims[id] == nil else { return false }
            claims[id] = ClaimHolder()
            return true
        }
        guard claimed else { return false }
        guard let shared else { return true }
        do throws(StoreError) {
            if try shared.claimUpload(id, node: options.nodeID, until: now() + Self.claimLease) { return true }
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
            _ = try shared?.claimUpload(id, node: options.nodeID, until: now() + Self.claimLease)
        } catch {
            // The claim lapses at its lease's end; another node may then take the upload over.
            logger.warning("Cannot renew an upload's claim", metadata: ["upload.id": "\(id)", "error": "\(error)"])
        }
    }

    func releaseUpload(_ id: String) {
        shared?.releaseUpload(id, node: options.nodeID)
        _ = busyUploads.withLock { $0.removeValue(forKey: id) }
    }
}

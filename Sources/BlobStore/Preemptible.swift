import BlobCatalog
import BlobContent
import BlobCore
/// A request holding a claim (a tus append, an S3 part being received) that a newer request
/// of the same upload may stop, as tusd does. libmicrohttpd 0.9.75's edge-triggered epoll can
/// miss the close of a client that went away with its last bytes; without this, the claim would
/// stay until the connection timeout and the client's retry would get 423.
public protocol Preemptible: AnyObject, Sendable {
    /// Ends the request's use of the claim as if its client had gone (keeping what arrived where
    /// that is safe) and releases the claim; returns once it is released. Idempotent.
    func preempt()
}

/// Who holds a claim, when a newer request may stop it.
struct ClaimHolder: Sendable {
    weak var request: (any Preemptible)?
}

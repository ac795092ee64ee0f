import BlobStore
import MicroHTTPD

/// Whom an upload counts against for `--max-open-uploads`.
extension AccessPolicy {
    /// The credential of an authorized request (a token by its digest: the index never holds
    /// a token; a catalog key by its id), or in open access and for anonymous callers the
    /// client's address.
    public func uploadOwner(_ head: HTTPRequestHead) -> String {
        if !isOpen, let caller = try? BearerAuthenticator(self).authenticate(head), !caller.isAnonymous {
            return caller.name
        }
        return addressOwner(head)
    }

    /// The client's address without its port (`addr:192.0.2.1`, `addr:2001:db8::1`): the one a
    /// trusted proxy forwarded, else the peer's.
    public func addressOwner(_ head: HTTPRequestHead) -> String {
        "addr:" + proxies.clientHost(of: head)
    }
}

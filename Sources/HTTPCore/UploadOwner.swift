import BlobStore
import MicroHTTPD

/// Whom an upload counts against for `--max-open-uploads`.
extension AccessPolicy {
    /// The bearer token of an authorized request (by its digest: the index never holds a
    /// token), or in open access the client's address.
    public func uploadOwner(_ head: HTTPRequestHead) -> String {
        if !isOpen, case .bearer(let digest)? = (try? BearerAuthenticator(self).authenticate(head))?.identity {
            return "token:" + digest
        }
        return addressOwner(head)
    }

    /// The client's address without its port (`addr:192.0.2.1`, `addr:2001:db8::1`): the one a
    /// trusted proxy forwarded, else the peer's.
    public func addressOwner(_ head: HTTPRequestHead) -> String {
        "addr:" + proxies.clientHost(of: head)
    }
}

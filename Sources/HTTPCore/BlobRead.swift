import BlobStore
import MicroHTTPD

/// The GET path of every dialect: the record is looked up (on PostgreSQL the connection is
/// suspended while the index answers), the version found is opened, and the dialect's answer
/// is made on the connection's worker thread; a failure anywhere becomes the dialect's error.
public enum BlobRead {
    /// `open`: the version `store.lookUp` found (or the dialect's not-found failure); `answer`:
    /// the response to the open version; `failure`: the response to an error.
    public static func later(_ store: BlobStore, _ key: BlobKey,
                             open: @escaping @Sendable (BlobRecord?) throws -> OpenBlob,
                             answer: @escaping @Sendable (OpenBlob) throws -> HTTPResponse,
                             failure: @escaping @Sendable (any Error) -> HTTPResponse) -> HTTPRequestAction {
        .later { responder in
            store.lookUp(key) { found in
                responder.send {
                    do {
                        return try answer(open(found.get()))
                    } catch {
                        return failure(error)
                    }
                }
            }
        }
    }
}

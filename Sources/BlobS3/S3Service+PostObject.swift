import BlobStore
import HTTPCore
import MicroHTTPD

extension S3Service {
    /// POST Object: a browser form upload.
    func receivePostObject(_ head: HTTPRequestHead, bucket: String, requestID: String) throws -> HTTPRequestAction {
        throw S3Error(.notImplemented, "POST Object is not implemented yet.")
    }
}

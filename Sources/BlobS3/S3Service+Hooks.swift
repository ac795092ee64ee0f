import HTTPCore
import MicroHTTPD
import TusHooks

/// tusd's blocking hooks on S3 writes: pre-create before PutObject's body and before
/// CreateMultipartUpload, pre-finish before PutObject's commit and before a Complete joins the
/// parts. The hook sees the object as tus metadata (`key` is `BUCKET/KEY`, `filetype` the
/// Content-Type, the `x-amz-meta-*` fields by name).
extension S3Service {
    static let hookMetadataPrefix = "x-amz-meta-"

    /// What a hook is told about an object being written.
    func hookUpload(_ head: HTTPRequestHead, bucket: String, key: String, size: UInt64?) -> HookUpload {
        HookUpload(size: size, offset: 0, metadata: head.hookMetadata(key: bucket + "/" + key, prefix: Self.hookMetadataPrefix),
                   storage: ["Type": "blobd", "Bucket": bucket, "Key": key])
    }

    /// Runs `then` at once without a pre-create hook; with one, once it lets the write go on
    /// (with the metadata it gives, if any).
    func preCreate(_ head: HTTPRequestHead, bucket: String, key: String, requestID: String,
                   then: @escaping @Sendable (HTTPRequestHead) throws -> HTTPRequestAction) throws -> HTTPRequestAction {
        guard let hooks, hooks.runs(.preCreate) else { return try then(head) }
        let size = (head["x-amz-decoded-content-length"] ?? head["Content-Length"]).flatMap { UInt64($0) }
        return hooks.preCreate(head, upload: hookUpload(head, bucket: bucket, key: key, size: size),
                               failure: { [self] error in failure(error, head: head, bucket: bucket, key: key, requestID: requestID) }) { changes in
            try then(changes.metadata.map { head.applyingHookMetadata($0, prefix: Self.hookMetadataPrefix) } ?? head)
        }
    }

    /// The pre-finish hook of a Complete, on the commit pool's thread: nil to go on, or the
    /// rejection to answer; a hook that fails throws.
    func preFinishComplete(_ head: HTTPRequestHead, bucket: String, key: String) throws -> HTTPResponse? {
        guard let hooks, hooks.runs(.preFinish) else { return nil }
        switch hooks.call(.preFinish, upload: hookUpload(head, bucket: bucket, key: key, size: nil), head: head) {
        case .proceed: return nil
        case .reject(let response): return response
        case .fail(let error): throw error
        }
    }
}

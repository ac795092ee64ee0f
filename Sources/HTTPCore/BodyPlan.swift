import BlobStore
import MicroHTTPD

/// How the bytes of a blob's range go out, in every dialect: up to 16 KiB are read into memory
/// and go out with the head in one send; larger ones go out with sendfile.
public enum BodyPlan {
    /// Bodies up to this size are inline.
    public static let inlineLimit: UInt64 = 16 * 1024

    /// The bytes of `range` of `blob`; `.empty` for no range (an empty blob or part).
    public static func body(of blob: OpenBlob, _ range: ByteRange?) throws -> HTTPResponse.Body {
        guard let range, blob.record.size > 0 else { return .empty }
        if range.length <= inlineLimit {
            return .bytes(try blob.bytes(at: range.start, count: Int(range.length)))
        }
        return .file(descriptor: try blob.takeDescriptor().rawValue, offset: range.start, length: range.length)
    }
}

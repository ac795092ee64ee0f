import BlobCore

/// The multipart uploads the index keeps, so they survive restarts.
public protocol MultipartIndex: Sendable {
    /// Adds a new upload of `owner` (a credential or client address; nil for none). In the same
    /// transaction, throws `.tooManyUploads` when `owner` has `limit` (> 0) unfinished,
    /// unexpired uploads already, tus and multipart together.
    func insertMultipart(_ upload: MultipartUpload, owner: String?, limit: Int) throws(StoreError)
    func multipart(_ id: String) throws(StoreError) -> MultipartUpload?
    /// Unfinished uploads whose key starts with `prefix`, by key then start time.
    func multipartUploads(prefix: [UInt8]) throws(StoreError) -> [MultipartUpload]
    /// Records a part, replacing one of the same number (returned); `.uploadNotFound` unless
    /// the upload exists and is not completed.
    func savePart(_ part: UploadedPart, of id: String) throws(StoreError) -> UploadedPart?
    func parts(of id: String) throws(StoreError) -> [UploadedPart]
    /// Marks upload `id` completed into an object of ETag `etag` and checksum `checksum`
    /// (`BlobRecord.checksum`), which replaces the upload's, and drops its parts.
    func markCompleted(_ id: String, etag: String, checksum: String?) throws(StoreError)
    func removeMultipart(_ id: String) throws(StoreError)
    func expiredMultipartUploads(now: Int64) throws(StoreError) -> [String]
    /// Sets when unfinished upload `id` expires (a part arrived: it was not idle).
    func extendMultipart(_ id: String, until expires: Int64) throws(StoreError)
}

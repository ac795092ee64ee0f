/// An S3 multipart upload as the index keeps it: where the object will go, what it will be
/// stored with, and its parts so far (`DIR/uploads/mp-ID-N`, each fsynced before it is listed).
public struct MultipartUpload: Sendable, Equatable {
    /// Server-chosen id (32 hex digits).
    public var id: String
    /// The blob the upload completes into.
    public var key: BlobKey
    /// What the object will be stored with.
    public var attributes: BlobAttributes
    /// When it was started, seconds since the epoch.
    public var created: Int64
    /// When it is removed if not completed, seconds since the epoch.
    public var expires: Int64
    /// The completed object's S3 ETag once completed (a repeated Complete answers it again).
    public var completedETag: String?
    /// The S3 checksum its parts carry and how the object's is made from them, as
    /// `algorithm:TYPE` (`sha256:COMPOSITE`, `crc32:FULL_OBJECT`); nil when none was asked for.
    /// Once completed, the object's checksum as `BlobRecord.checksum` keeps it (`sha256:BASE64-3`),
    /// which a repeated Complete answers again.
    public var checksum: String?
    /// The Object Lock CreateMultipartUpload asked for (`x-amz-object-lock-*`), which Complete
    /// gives the new version in the commit that makes it; nil when none.
    public var lock: ObjectLock?

    public init(id: String, key: BlobKey, attributes: BlobAttributes, created: Int64, expires: Int64, completedETag: String? = nil,
                checksum: String? = nil, lock: ObjectLock? = nil) {
        self.checksum = checksum
        self.lock = lock
        self.id = id
        self.key = key
        self.attributes = attributes
        self.created = created
        self.expires = expires
        self.completedETag = completedETag
    }
}

/// One uploaded part.
public struct UploadedPart: Sendable, Equatable {
    public var number: Int
    public var size: UInt64
    /// MD5 of the part (its S3 ETag).
    public var md5: [UInt8]
    /// When it was uploaded, seconds since the epoch.
    public var modified: Int64
    /// The part's checksum in its upload's algorithm (base64), when the upload has one.
    public var checksum: String?

    public init(number: Int, size: UInt64, md5: [UInt8], modified: Int64, checksum: String? = nil) {
        self.checksum = checksum
        self.number = number
        self.size = size
        self.md5 = md5
        self.modified = modified
    }
}

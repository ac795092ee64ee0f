/// A resumable upload (tus) as the index keeps it.
public struct UploadRecord: Sendable, Equatable {
    /// Server-chosen id (32 hex digits); also the data file's name in `DIR/uploads`.
    public var id: String
    /// Total length, nil while deferred.
    public var length: UInt64?
    /// Bytes received, fsynced and saved: always safe to resume from.
    public var offset: UInt64
    /// SHA-256 state after `offset` bytes.
    public var hashState: [UInt8]
    /// The Upload-Metadata the client sent, echoed on HEAD.
    public var metadata: String
    /// The key to store the blob at; nil for content-addressed.
    public var key: BlobKey?
    /// What the finished blob is stored with (media type, Cache-Control, Content-Disposition).
    public var attributes: BlobAttributes
    /// When the upload expires if nothing more arrives, seconds since the epoch.
    public var expires: Int64
    /// The key the finished blob was stored at; nil while unfinished.
    public var completedKey: BlobKey?

    /// Creates a record.
    public init(id: String, length: UInt64?, offset: UInt64, hashState: [UInt8], metadata: String, key: BlobKey?,
                attributes: BlobAttributes, expires: Int64, completedKey: BlobKey? = nil) {
        self.id = id
        self.length = length
        self.offset = offset
        self.hashState = hashState
        self.metadata = metadata
        self.key = key
        self.attributes = attributes
        self.expires = expires
        self.completedKey = completedKey
    }

    /// True once every byte has arrived and the blob is stored.
    public var isComplete: Bool { completedKey != nil }
}

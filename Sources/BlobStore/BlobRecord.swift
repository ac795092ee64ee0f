/// What the index knows about one stored version of a blob.
public struct BlobRecord: Sendable, Equatable {
    /// The blob's key.
    public var key: BlobKey
    /// Server-chosen id of this version: its file name and its ETag. New on every commit.
    public var version: String
    /// Size in bytes.
    public var size: UInt64
    /// SHA-256 of the content (32 bytes).
    public var sha256: [UInt8]
    /// Media type given at upload.
    public var contentType: String
    /// Commit time, seconds since the Unix epoch.
    public var modified: Int64
    /// `Cache-Control` given at upload, sent with every GET and HEAD; nil when none was.
    public var cacheControl: String?
    /// `Content-Disposition` given at upload, sent with every GET and HEAD; nil when none was.
    public var contentDisposition: String?

    /// Creates a record.
    public init(key: BlobKey, version: String, size: UInt64, sha256: [UInt8], contentType: String, modified: Int64,
                cacheControl: String? = nil, contentDisposition: String? = nil) {
        self.key = key
        self.version = version
        self.size = size
        self.sha256 = sha256
        self.contentType = contentType
        self.modified = modified
        self.cacheControl = cacheControl
        self.contentDisposition = contentDisposition
    }

    /// Creates a record with the attributes an upload gave.
    public init(key: BlobKey, version: String, size: UInt64, sha256: [UInt8], attributes: BlobAttributes, modified: Int64) {
        self.init(key: key, version: version, size: size, sha256: sha256, contentType: attributes.contentType,
                  modified: modified, cacheControl: attributes.cacheControl, contentDisposition: attributes.contentDisposition)
    }

    /// The attributes the upload gave.
    public var attributes: BlobAttributes {
        BlobAttributes(contentType: contentType, cacheControl: cacheControl, contentDisposition: contentDisposition)
    }

    /// The SHA-256 as lowercase hex.
    public var sha256Hex: String { hex(sha256) }

    /// The file of version `abcd…`, relative to the data directory's `blobs/` folder: `ab/abcd…`.
    /// The 256 folders are made when the store opens, so a
    /// write never creates (and fsyncs) a folder; ext4's hashed directories stay fast with
    /// tens of thousands of entries each.
    static func relativePath(of version: String) -> String {
        "\(version.prefix(2))/\(version)"
    }

    /// Characters in a version: 32 lowercase hex digits.
    static let versionLength = 32

    /// The 256 folder names under `blobs/`.
    static let folders: [String] = (0..<256).map { hex([UInt8($0)]) }
}

/// What an upload says about its blob: stored with each version, returned on GET and HEAD.
public struct BlobAttributes: Sendable, Equatable {
    /// The media type (`application/octet-stream` when the upload gave none).
    public var contentType: String
    /// `Cache-Control` for the blob's responses.
    public var cacheControl: String?
    /// `Content-Disposition` for the blob's responses.
    public var contentDisposition: String?

    /// Creates attributes.
    public init(contentType: String = "application/octet-stream", cacheControl: String? = nil, contentDisposition: String? = nil) {
        self.contentType = contentType
        self.cacheControl = cacheControl
        self.contentDisposition = contentDisposition
    }
}

/// Lowercase hex of `bytes`.
public func hex(_ bytes: some Sequence<UInt8>) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    for byte in bytes {
        out.append(digits[Int(byte >> 4)])
        out.append(digits[Int(byte & 0x0F)])
    }
    return String(decoding: out, as: UTF8.self)
}

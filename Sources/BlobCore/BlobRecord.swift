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
    /// Commit time, seconds since the Unix epoch.
    public var modified: Int64
    /// What the upload said about the blob: media type, standard headers, user metadata.
    public var attributes: BlobAttributes
    /// MD5 of the content, when the upload computed one (S3 uploads do: S3 clients take a
    /// single-part object's ETag for its MD5).
    public var md5: [UInt8]?
    /// For an object assembled from S3 multipart parts: how many, with `md5` the MD5 of the
    /// parts' MD5s (its S3 ETag is `md5-parts`).
    public var parts: Int?
    /// The sizes of those parts, in order (nil for a single-part blob, and for multipart objects
    /// completed before blobd recorded them), so that S3 can serve a part by its number.
    public var partSizes: [UInt64]?
    /// The parts' own checksums (base64, in `checksum`'s algorithm, in order), for an object whose
    /// checksum is made from them (COMPOSITE), so that S3 can answer a part's with its bytes.
    public var partChecksums: [String]?
    /// The S3 additional checksum the upload gave and blobd verified, as `algorithm:base64`
    /// (`crc32:AAAAAA==`); nil when none was given.
    public var checksum: String?
    /// True for a version written while its bucket's versioning was enabled: its S3 version id
    /// is `version`. False for the `null` version (written unversioned or suspended).
    public var versioned = false
    /// The blob's own deadline (seconds since the epoch), from the time to live its upload gave
    /// (`?ttl=`, tus `ttl`): answered as `Blob-Expires-At`; nil when none was given.
    public var ttlExpires: Int64?
    /// The deadline the index keeps for the sweep (column `expires_at`, indexed): the earlier of
    /// `ttlExpires` and the bucket's lifecycle expiration when it was stamped (at commit, and
    /// again when the bucket's rules change). Reads decide with the rules in force instead
    /// (`LifecycleRules.deadline(of:)`).
    public var expiresAt: Int64?
    /// The version's Object Lock: retention and legal hold (none unless set).
    public var lock = ObjectLock.unlocked

    /// Creates a record with the attributes an upload gave.
    public init(key: BlobKey, version: String, size: UInt64, sha256: [UInt8], attributes: BlobAttributes, modified: Int64,
                md5: [UInt8]? = nil, parts: Int? = nil, partSizes: [UInt64]? = nil, partChecksums: [String]? = nil,
                checksum: String? = nil, ttlExpires: Int64? = nil, expiresAt: Int64? = nil) {
        self.ttlExpires = ttlExpires
        self.expiresAt = expiresAt
        self.md5 = md5
        self.parts = parts
        self.partSizes = partSizes
        self.partChecksums = partChecksums
        self.checksum = checksum
        self.key = key
        self.version = version
        self.size = size
        self.sha256 = sha256
        self.attributes = attributes
        self.modified = modified
    }

    /// Creates a record with a media type and no other attributes.
    public init(key: BlobKey, version: String, size: UInt64, sha256: [UInt8], contentType: String, modified: Int64) {
        self.init(key: key, version: version, size: size, sha256: sha256,
                  attributes: BlobAttributes(contentType: contentType), modified: modified)
    }

    /// `partSizes` as the index stores them: decimal sizes separated by commas.
    public var partSizesText: String? {
        partSizes.map { $0.map(String.init).joined(separator: ",") }
    }

    /// Part sizes from their stored text (nil for nil or a malformed value).
    public static func partSizes(fromText text: String?) -> [UInt64]? {
        guard let text else { return nil }
        let sizes = text.split(separator: ",").compactMap { UInt64($0) }
        return sizes.isEmpty ? nil : sizes
    }

    /// `partChecksums` as the index stores them: separated by commas (base64 has none).
    public var partChecksumsText: String? {
        partChecksums.map { $0.joined(separator: ",") }
    }

    /// Part checksums from their stored text.
    public static func partChecksums(fromText text: String?) -> [String]? {
        guard let text, !text.isEmpty else { return nil }
        return text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
    }

    /// Media type given at upload.
    public var contentType: String { attributes.contentType }
    /// `Cache-Control` given at upload, sent with every GET and HEAD; nil when none was.
    public var cacheControl: String? { attributes.cacheControl }
    /// `Content-Disposition` given at upload, sent with every GET and HEAD; nil when none was.
    public var contentDisposition: String? { attributes.contentDisposition }

    /// The SHA-256 as lowercase hex.
    public var sha256Hex: String { hex(sha256) }

    /// The file of version `abcd…`, relative to the data directory's `blobs/` folder: `ab/abcd…`.
    /// The 256 folders are made when the store opens, so a
    /// write never creates (and fsyncs) a folder; ext4's hashed directories stay fast with
    /// tens of thousands of entries each.
    package static func relativePath(of version: String) -> String {
        "\(version.prefix(2))/\(version)"
    }

    /// Characters in a version: 32 lowercase hex digits.
    package static let versionLength = 32

    /// The 256 folder names under `blobs/`.
    package static let folders: [String] = (0..<256).map { hex([UInt8($0)]) }
}

/// What an upload says about its blob: stored with each version, returned on GET and HEAD.
public struct BlobAttributes: Sendable, Equatable {
    /// The media type (`application/octet-stream` when the upload gave none).
    public var contentType: String
    /// `Cache-Control` for the blob's responses.
    public var cacheControl: String?
    /// `Content-Disposition` for the blob's responses.
    public var contentDisposition: String?
    /// `Content-Encoding` of the stored bytes (`gzip`, ...), sent with every GET and HEAD.
    public var contentEncoding: String?
    /// `Content-Language` for the blob's responses.
    public var contentLanguage: String?
    /// `Expires` for the blob's responses, as given.
    public var expires: String?
    /// User metadata (S3's `x-amz-meta-NAME`): lowercase names, in name order.
    public var userMetadata: [UserMetadatum]

    /// One user metadata field.
    public struct UserMetadatum: Sendable, Equatable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// Creates attributes.
    public init(contentType: String = "application/octet-stream", cacheControl: String? = nil, contentDisposition: String? = nil,
                contentEncoding: String? = nil, contentLanguage: String? = nil, expires: String? = nil,
                userMetadata: [UserMetadatum] = []) {
        self.contentType = contentType
        self.contentLanguage = contentLanguage
        self.cacheControl = cacheControl
        self.contentDisposition = contentDisposition
        self.contentEncoding = contentEncoding
        self.expires = expires
        self.userMetadata = userMetadata.sorted { $0.name < $1.name }
    }

    /// The user metadata as stored in the index: `name:value` lines (values hold no line breaks).
    public var userMetadataText: String? {
        userMetadata.isEmpty ? nil : userMetadata.map { $0.name + ":" + $0.value }.joined(separator: "\n")
    }

    /// User metadata from its stored text.
    public static func userMetadata(fromText text: String?) -> [UserMetadatum] {
        (text ?? "").split(separator: "\n").compactMap { line -> UserMetadatum? in
            let parts = line.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { return nil }
            return UserMetadatum(name: String(parts[0]), value: String(parts[1]))
        }
    }
}

/// Lowercase hex of `bytes`, written straight into the string's storage (digests are hexed on
/// every S3 request).
@inlinable
public func hex(_ bytes: [UInt8]) -> String {
    String(unsafeUninitializedCapacity: bytes.count * 2) { out in
        for (index, byte) in bytes.enumerated() {
            out[2 * index] = hexDigit(byte >> 4)
            out[2 * index + 1] = hexDigit(byte & 0x0F)
        }
        return bytes.count * 2
    }
}

/// Lowercase hex of any bytes. Inlinable, so that callers in other modules get a version
/// specialized for their collection.
@inlinable
public func hex(_ bytes: some Sequence<UInt8>) -> String {
    var out: [UInt8] = []
    out.reserveCapacity(bytes.underestimatedCount * 2)
    for byte in bytes {
        out.append(hexDigit(byte >> 4))
        out.append(hexDigit(byte & 0x0F))
    }
    return String(decoding: out, as: UTF8.self)
}

/// The lowercase hex digit of a value 0...15.
@inlinable
package func hexDigit(_ value: UInt8) -> UInt8 {
    value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
}

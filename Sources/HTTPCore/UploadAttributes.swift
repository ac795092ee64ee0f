import BlobStore
import Foundation
import MicroHTTPD

/// What an upload's header fields (or tus metadata) say about its representation: the stored
/// attributes, the user metadata and its limit, and an announced Content-MD5. Both dialects
/// take them the same way; only the metadata prefix differs (`Blob-Meta-*`, `x-amz-meta-*`).
public enum UploadAttributes {
    /// S3's limit on user metadata: the UTF-8 bytes of every name (without its prefix) and value.
    public static let maxUserMetadataBytes = 2048

    /// The bytes S3 counts against `maxUserMetadataBytes`.
    public static func userMetadataBytes(_ fields: [(name: String, value: String)]) -> Int {
        fields.reduce(0) { $0 + $1.name.utf8.count + $1.value.trimmingOWS().utf8.count }
    }

    /// The attributes an upload gives its blob (from PUT and POST headers or tus metadata):
    /// each a field value of visible ASCII, spaces and tabs, at most 1024 bytes, or 400. An
    /// absent or empty media type, or curl's form default, is guessed from the extension of
    /// `typeName` (the key, or a file name), else `application/octet-stream` (`MediaTypes.stored`).
    public static func parse(contentType: String?, cacheControl: String?, contentDisposition: String?,
                             contentEncoding: String? = nil, contentLanguage: String? = nil, expires: String? = nil,
                             userMetadata: [(name: String, value: String)] = [],
                             typeGuessedFrom typeName: String? = nil) throws(HTTPError) -> BlobAttributes {
        var metadata: [BlobAttributes.UserMetadatum] = []
        for (name, text) in userMetadata {
            let lowered = name.lowercased()
            guard HTTPFraming.isToken(lowered), !lowered.contains(":") else { throw .badRequest("The metadata name '\(name)' is not a token.") }
            // One value may take the whole 2 KB that S3 allows for all of them (the total is checked by
            // each dialect: userMetadataBytes).
            metadata.append(.init(name: lowered, value: try fieldValue(text, "The metadata field \(lowered)", maxLength: 2048) ?? ""))
        }
        return BlobAttributes(contentType: MediaTypes.stored(sent: try fieldValue(contentType, "Content-Type"), name: typeName),
                              cacheControl: try fieldValue(cacheControl, "Cache-Control"),
                              contentDisposition: try fieldValue(contentDisposition, "Content-Disposition"),
                              contentEncoding: try fieldValue(contentEncoding, "Content-Encoding"),
                              contentLanguage: try fieldValue(contentLanguage, "Content-Language"),
                              expires: try fieldValue(expires, "Expires"), userMetadata: metadata)
    }

    /// A stored header value: at most `maxLength` bytes of visible ASCII, spaces and tabs (nil if empty).
    public static func fieldValue(_ text: String?, _ name: String, maxLength: Int = 1024) throws(HTTPError) -> String? {
        guard let text else { return nil }
        let trimmed = text.trimmingOWS()
        guard trimmed.utf8.count <= maxLength, trimmed.utf8.allSatisfy({ (0x20...0x7E).contains($0) || $0 == 0x09 }) else {
            throw .badRequest("\(name) must be at most \(maxLength) bytes of visible ASCII, spaces and tabs.")
        }
        return trimmed.isEmpty ? nil : String(trimmed)
    }

    /// The MD5 a `Content-MD5` field (RFC 1864, as S3 takes it) announces: base64 of 16 bytes, or 400.
    public static func contentMD5(_ head: HTTPRequestHead) throws(HTTPError) -> [UInt8]? {
        guard let value = head["Content-MD5"] else { return nil }
        guard let digest = Data(base64Encoded: String(value.trimmingOWS())), digest.count == 16 else {
            throw .badRequest("Content-MD5 must be the base64 of a 16-byte MD5 digest.")
        }
        return Array(digest)
    }
}

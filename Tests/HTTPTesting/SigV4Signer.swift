import CCrypto
import Foundation

/// AWS Signature Version 4 for S3 as AWS documents it, written apart from blobd's verifier so
/// that a test checks one against the other: a header-signed request and a presigned URL.
public struct SigV4Signer: Sendable {
    public let accessKey: String
    public let secret: String
    public let region: String

    public init(accessKey: String, secret: String, region: String = "us-east-1") {
        self.accessKey = accessKey
        self.secret = secret
        self.region = region
    }

    /// The header fields that sign `method path?query` (path and query already encoded, the
    /// query's parameters in canonical order) sent to `host` at `date`.
    public func headers(_ method: String, path: String, query: String = "", host: String,
                        payload: String = "UNSIGNED-PAYLOAD", date: Date = Date()) -> [String] {
        let (day, stamp) = Self.stamps(date)
        let scope = "\(day)/\(region)/s3/aws4_request"
        let signed = "host;x-amz-content-sha256;x-amz-date"
        let canonical = [method, path, query, "host:\(host)\nx-amz-content-sha256:\(payload)\nx-amz-date:\(stamp)\n", signed, payload]
            .joined(separator: "\n")
        let signature = sign(canonical, day: day, stamp: stamp, scope: scope)
        return ["x-amz-date: \(stamp)", "x-amz-content-sha256: \(payload)",
                "Authorization: AWS4-HMAC-SHA256 Credential=\(accessKey)/\(scope),SignedHeaders=\(signed),Signature=\(signature)"]
    }

    /// The target `path?query` of a presigned URL for `method path`, valid `expires` seconds
    /// from `date`.
    public func presign(_ method: String, path: String, host: String, expires: Int, date: Date = Date()) -> String {
        let (day, stamp) = Self.stamps(date)
        let scope = "\(day)/\(region)/s3/aws4_request"
        let query = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=\(Self.encode(accessKey + "/" + scope))"
            + "&X-Amz-Date=\(stamp)&X-Amz-Expires=\(expires)&X-Amz-SignedHeaders=host"
        let canonical = [method, path, query, "host:\(host)\n", "host", "UNSIGNED-PAYLOAD"].joined(separator: "\n")
        return path + "?" + query + "&X-Amz-Signature=" + sign(canonical, day: day, stamp: stamp, scope: scope)
    }

    private func sign(_ canonical: String, day: String, stamp: String, scope: String) -> String {
        let toSign = ["AWS4-HMAC-SHA256", stamp, scope, Self.hex(Self.sha256(Array(canonical.utf8)))].joined(separator: "\n")
        var key = Self.hmac(Array("AWS4\(secret)".utf8), day)
        for part in [region, "s3", "aws4_request"] { key = Self.hmac(key, part) }
        return Self.hex(Self.hmac(key, toSign))
    }

    /// SHA-256 of `bytes` as lowercase hex, for `x-amz-content-sha256`.
    public static func payloadHash(_ bytes: [UInt8]) -> String { hex(sha256(bytes)) }

    static func stamps(_ date: Date) -> (day: String, stamp: String) {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        let stamp = formatter.string(from: date)
        return (String(stamp.prefix(8)), stamp)
    }

    /// RFC 3986 percent-encoding of everything but the unreserved characters.
    public static func encode(_ text: String) -> String {
        text.utf8.map { byte in
            let c = Character(UnicodeScalar(byte))
            return c.isASCII && (c.isLetter || c.isNumber || "-_.~".contains(c)) ? String(c) : String(format: "%%%02X", byte)
        }.joined()
    }

    static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        _ = SHA256(bytes, bytes.count, &out)
        return out
    }

    static func hmac(_ key: [UInt8], _ message: String) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 32
        let data = Array(message.utf8)
        _ = HMAC(EVP_sha256(), key, Int32(key.count), data, data.count, &out, &length)
        return out
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
}

/// SHA-256 of `bytes` in base64, as `Repr-Digest` and `x-amz-checksum-sha256` carry it.
public func sha256Base64(_ bytes: [UInt8]) -> String {
    Data(SigV4Signer.sha256(bytes)).base64EncodedString()
}

/// MD5 of `bytes` in base64, as `Content-MD5` carries it.
public func md5Base64(_ bytes: [UInt8]) -> String {
    var out = [UInt8](repeating: 0, count: 16)
    _ = MD5(bytes, bytes.count, &out)
    return Data(out).base64EncodedString()
}

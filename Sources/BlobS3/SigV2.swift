import HTTPCore
import BlobStore
import Foundation
import MicroHTTPD

#if canImport(Glibc)
import Glibc
import Access
#endif

/// AWS Signature Version 2 as S3 defined it ("Signing and authenticating REST requests"): the
/// `Authorization: AWS ID:SIGNATURE` header, and presigned URLs with `AWSAccessKeyId`,
/// `Signature` and `Expires`. boto3 and aws-cli still presign with it by default, and MinIO and
/// Ceph RGW accept it. The signature is a base64 HMAC-SHA1 of:
///
///     VERB \n Content-MD5 \n Content-Type \n Date-or-Expires \n CanonicalizedAmzHeaders CanonicalizedResource
///
/// Every `x-amz-*` header is in CanonicalizedAmzHeaders, so none can be added unsigned.
enum SigV2 {
    struct Signed {
        var accessKey: String
        /// The signature as sent (base64).
        var signature: String
        /// Seconds since the epoch a presigned URL expires at; nil for the header.
        var expires: Int64?
    }

    /// The query parameters of a SigV2 presigned URL.
    static let queryParameters: Set<String> = ["AWSAccessKeyId", "Signature", "Expires"]

    /// The sub-resources CanonicalizedResource keeps, with their values (AWS's list, and those
    /// botocore and MinIO add to it).
    static let subresources: Set<String> = [
        "accelerate", "acl", "analytics", "cors", "delete", "encryption", "intelligent-tiering", "inventory", "legal-hold",
        "lifecycle", "location", "logging", "metrics", "notification", "object-lock", "partNumber", "policy",
        "replication", "requestPayment", "response-cache-control", "response-content-disposition",
        "response-content-encoding", "response-content-language", "response-content-type", "response-expires",
        "restore", "retention", "select", "select-type", "storageClass", "tagging", "torrent", "uploadId", "uploads",
        "versionId", "versioning", "versions", "website",
    ]

    /// Parses a SigV2 signature: nil when the request has none.
    static func signed(_ head: HTTPRequestHead, query: [(name: String, value: [UInt8])]) throws(S3Error) -> Signed? {
        if let authorization = head["Authorization"] {
            guard authorization.hasPrefix("AWS ") else { return nil }
            let credential = authorization.dropFirst(4).trimmingOWS()
            guard let colon = credential.lastIndex(of: ":"), colon != credential.startIndex,
                  credential.index(after: colon) != credential.endIndex else {
                throw S3Error(.invalidArgument, "AWS authorization header is invalid. Expected AwsAccessKeyId:signature")
            }
            guard !query.contains(where: { $0.name == "Signature" || $0.name == "X-Amz-Signature" }) else {
                throw onlyOneMechanism
            }
            return Signed(accessKey: String(credential[..<colon]), signature: String(credential[credential.index(after: colon)...]))
        }
        var key: [UInt8]?, signature: [UInt8]?, expires: [UInt8]?
        for item in query where queryParameters.contains(item.name) {
            switch item.name {
            case "AWSAccessKeyId" where key == nil: key = item.value
            case "Signature" where signature == nil: signature = item.value
            case "Expires" where expires == nil: expires = item.value
            default: throw S3Error(.invalidArgument, "The query parameter \(item.name) may be given only once.")
            }
        }
        guard let key, let signature else { return nil }
        guard !query.contains(where: { $0.name == "X-Amz-Algorithm" }) else { throw onlyOneMechanism }
        guard let expires, let seconds = Int64(String(decoding: expires, as: UTF8.self)) else {
            throw S3Error(.accessDenied, "Query-string authentication requires the Signature, Expires and AWSAccessKeyId parameters",
                          refusal: .badSignature)
        }
        return Signed(accessKey: String(decoding: key, as: UTF8.self), signature: String(decoding: signature, as: UTF8.self),
                      expires: seconds)
    }

    static let onlyOneMechanism = S3Error(
        .invalidArgument, "Only one auth mechanism allowed; only the Signature query parameter or the Authorization header should be specified.")

    /// The string to sign (AWS: StringToSign). A presigned URL's Content-MD5, Content-Type and
    /// `x-amz-*` values may come in the query (where botocore moves them) instead of headers.
    static func stringToSign(method: String, rawPath: [UInt8], query: [(name: String, value: [UInt8])],
                             headers: [(name: String, value: String)], signed: Signed) -> [UInt8] {
        let newline = UInt8(ascii: "\n")
        func field(_ name: String) -> [UInt8] {
            if let value = headers.first(where: { $0.name.caseInsensitiveEquals(name) })?.value { return Array(value.trimmingOWS().utf8) }
            guard signed.expires != nil else { return [] }
            return query.first { $0.name.caseInsensitiveEquals(name) }?.value ?? []
        }
        var out = Array(method.utf8)
        out.append(newline)
        out += field("Content-MD5")
        out.append(newline)
        out += field("Content-Type")
        out.append(newline)
        if let expires = signed.expires {
            out += String(expires).utf8
        } else if !headers.contains(where: { $0.name.caseInsensitiveEquals("x-amz-date") }) {
            // With x-amz-date, the Date line is empty (x-amz-date is among the amz headers).
            out += field("Date")
        }
        out.append(newline)
        appendAmzHeaders(headers, query: signed.expires == nil ? [] : query, to: &out)
        appendResource(rawPath, query: query, to: &out)
        return out
    }

    /// CanonicalizedAmzHeaders: every `x-amz-*` header (and, in a presigned URL, query
    /// parameter), lowercased, sorted by name, values trimmed and joined by commas.
    static func appendAmzHeaders(_ headers: [(name: String, value: String)], query: [(name: String, value: [UInt8])],
                                 to out: inout [UInt8]) {
        var fields: [(name: String, value: [UInt8])] = []
        for header in headers where header.name.lowercased().hasPrefix("x-amz-") {
            fields.append((header.name.lowercased(), Array(header.value.trimmingOWS().utf8)))
        }
        for item in query where item.name.lowercased().hasPrefix("x-amz-") {
            fields.append((item.name.lowercased(), item.value))
        }
        // A stable sort keeps a repeated header's values in the order sent.
        let sorted = fields.enumerated().sorted { a, b in
            a.element.name == b.element.name ? a.offset < b.offset : a.element.name.utf8.lexicographicallyPrecedes(b.element.name.utf8)
        }.map(\.element)
        for (index, field) in sorted.enumerated() {
            if index > 0 && sorted[index - 1].name == field.name {
                out.removeLast()
                out.append(UInt8(ascii: ","))
            } else {
                out += field.name.utf8
                out.append(UInt8(ascii: ":"))
            }
            out += field.value
            out.append(UInt8(ascii: "\n"))
        }
    }

    /// CanonicalizedResource: the path as sent, then the sub-resources sorted by name, with
    /// their decoded values.
    static func appendResource(_ rawPath: [UInt8], query: [(name: String, value: [UInt8])], to out: inout [UInt8]) {
        if rawPath.isEmpty { out.append(UInt8(ascii: "/")) } else { out += rawPath }
        let kept = query.enumerated().filter { subresources.contains($0.element.name) }.sorted { a, b in
            a.element.name == b.element.name ? a.offset < b.offset : a.element.name.utf8.lexicographicallyPrecedes(b.element.name.utf8)
        }
        for (index, item) in kept.map(\.element).enumerated() {
            out.append(UInt8(ascii: index == 0 ? "?" : "&"))
            out += item.name.utf8
            if !item.value.isEmpty {
                out.append(UInt8(ascii: "="))
                out += item.value
            }
        }
    }

    /// A presigned URL's Content-Type, Content-MD5 and `x-amz-*` query parameters as the headers
    /// they stand for: botocore moves them out of the headers it signed, into the query, so that a
    /// presigned PUT's type and metadata are the signer's. Only for a SigV2 URL whose signature
    /// checked out, and only those the request does not send as headers.
    static func queryFieldsAsHeaders(_ head: HTTPRequestHead, query: [(name: String, value: [UInt8])]) -> HTTPRequestHead {
        var added: [(name: String, value: String)] = []
        for item in query {
            let name = item.name.lowercased()
            guard name.hasPrefix("x-amz-") || name == "content-type" || name == "content-md5", head[name] == nil,
                  !added.contains(where: { $0.name == name }),
                  item.value.allSatisfy({ $0 >= 0x20 && $0 != 0x7F }) else { continue }
            added.append((name, String(decoding: item.value, as: UTF8.self)))
        }
        guard !added.isEmpty else { return head }
        return HTTPRequestHead(method: head.method, path: head.path, version: head.version, headers: head.headers + added,
                               query: head.query, peer: head.peer, annotation: head.annotation)
    }

    /// `/BUCKET` for `/BUCKET/` and the other way round; nil for any other path.
    static func bucketPathVariant(_ path: [UInt8]) -> [UInt8]? {
        let slash = UInt8(ascii: "/")
        guard path.count > 1, path.first == slash else { return nil }
        let rest = path.dropFirst()
        if let inner = rest.firstIndex(of: slash) {
            return inner == rest.endIndex - 1 ? Array(path.dropLast()) : nil
        }
        return path + [slash]
    }

    /// The base64 HMAC-SHA1 of `stringToSign`.
    static func signature(secret: String, stringToSign: [UInt8]) -> String {
        Data(hmacSHA1(Array(secret.utf8), stringToSign)).base64EncodedString()
    }

    /// HMAC-SHA1 (RFC 2104).
    static func hmacSHA1(_ key: [UInt8], _ data: [UInt8]) -> [UInt8] {
        let blockSize = 64
        var key = key
        if key.count > blockSize {
            var hasher = SHA1Hasher()
            key.withUnsafeBytes { hasher.update($0) }
            key = hasher.finalize()
        }
        var inner = SHA1Hasher(), outer = SHA1Hasher()
        let innerPad = (0..<blockSize).map { (i: Int) -> UInt8 in (i < key.count ? key[i] : 0) ^ 0x36 }
        let outerPad = (0..<blockSize).map { (i: Int) -> UInt8 in (i < key.count ? key[i] : 0) ^ 0x5C }
        innerPad.withUnsafeBytes { inner.update($0) }
        data.withUnsafeBytes { inner.update($0) }
        outerPad.withUnsafeBytes { outer.update($0) }
        inner.finalize().withUnsafeBytes { outer.update($0) }
        return outer.finalize()
    }

    /// Seconds since the epoch a header-signed request says it was made: `x-amz-date` (an
    /// HTTP date, or SigV4's `YYYYMMDDTHHMMSSZ`) or else `Date`.
    static func requestTime(_ head: HTTPRequestHead) -> Int64? {
        // AWS's own examples write the zone as +0000, which HTTP's dates spell GMT.
        func parse(_ value: String) -> Int64? {
            var text = String(value.trimmingOWS())
            if text.hasSuffix(" +0000") { text = String(text.dropLast(5)) + "GMT" }
            return HTTPDate.parse(text) ?? SigV4.seconds(ofAmzDate: text)
        }
        return head["x-amz-date"].map(parse) ?? head["Date"].flatMap(parse)
    }
}

extension S3Service {
    /// Longest a SigV2 presigned URL may still be valid for: SigV4's 7 days.
    static let maxPresignedLifetime: Int64 = 604_800

    /// Checks a SigV2 signature: the same rules as SigV4's, on SigV2's string to sign.
    func authenticate(_ head: HTTPRequestHead, query: [(name: String, value: [UInt8])],
                      sigV2 signed: SigV2.Signed) throws(S3Error) -> Authorized {
        guard let key = access.s3Key(signed.accessKey) else { throw unknownAccessKey(signed.accessKey) }
        let now = store.now()
        if let expires = signed.expires {
            guard now <= expires else { throw S3Error(.accessDenied, "Request has expired", refusal: .expired) }
            guard expires <= now + Self.maxPresignedLifetime else {
                throw S3Error(.accessDenied, "Expires must be at most 604800 seconds (7 days) from now.",
                              refusal: .badSignature)
            }
        } else {
            guard let date = SigV2.requestTime(head) else {
                throw S3Error(.accessDenied, "AWS authentication requires a valid Date or x-amz-date header",
                              refusal: .badSignature)
            }
            guard abs(now - date) <= Self.maxSkew else {
                throw S3Error(.requestTimeTooSkewed, "The difference between the request time and the current time is too large.")
            }
        }
        // SigV2 signs no chunks: a signed aws-chunked body would go unchecked.
        if let mode = head["x-amz-content-sha256"], mode.hasPrefix("STREAMING-AWS4-HMAC-SHA256") {
            throw S3Error(.invalidRequest, "\(mode) needs a SigV4 signature.")
        }
        // botocore signs a bucket as `/BUCKET/` whether or not the path has the slash: both name
        // the same bucket, so either form is accepted.
        let paths = [head.path] + (SigV2.bucketPathVariant(head.path).map { [$0] } ?? [])
        let matches = paths.contains { path in
            let stringToSign = SigV2.stringToSign(method: head.method, rawPath: path, query: query, headers: head.headers, signed: signed)
            let expected = SigV2.signature(secret: key.secret, stringToSign: stringToSign)
            return AccessPolicy.constantTimeEqual(Array(expected.utf8), Array(signed.signature.utf8))
        }
        guard matches else {
            throw S3Error(.signatureDoesNotMatch,
                          "The request signature we calculated does not match the signature you provided. Check your key and signing method.")
        }
        return Authorized(signed: nil, accessKey: signed.accessKey, key: key)
    }
}

import HTTPCore
import BlobStore
import Synchronization
import MicroHTTPD

/// AWS Signature Version 4 as S3 uses it: the `Authorization` header and presigned URLs.
/// The canonical request is built from the raw request target as received (nothing decoded,
/// nothing normalised), which is what the client signed.
enum SigV4 {
    /// What a request's signature says, before it is checked against the secret.
    struct Signed: Equatable {
        var accessKey: String
        /// `YYYYMMDD` of the credential scope.
        var scopeDate: String
        var region: String
        var service: String
        /// Lowercase header names, as listed.
        var signedHeaders: [String]
        var signature: String
        /// `YYYYMMDDTHHMMSSZ`.
        var amzDate: String
        /// The payload hash the signature covers (hex SHA-256, UNSIGNED-PAYLOAD, STREAMING-…).
        var payloadHash: String
        /// Seconds a presigned URL is valid; nil for header auth.
        var expires: Int64?
    }

    /// The query parameters a presigned URL carries for its signature.
    static let presignParameters: Set<String> = [
        "X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-SignedHeaders", "X-Amz-Signature",
        "X-Amz-Security-Token",
    ]

    /// `query` without a presigned URL's signature parameters (SigV4's or SigV2's): what the
    /// operation itself reads.
    static func operationParameters(_ query: [(name: String, value: [UInt8])]) -> [(name: String, value: [UInt8])] {
        query.filter { item in
            switch item.name.utf8.first {
            case UInt8(ascii: "X"): !presignParameters.contains(item.name)
            case UInt8(ascii: "A"), UInt8(ascii: "S"), UInt8(ascii: "E"): !SigV2.queryParameters.contains(item.name)
            default: true
            }
        }
    }

    /// What S3 answers a signature it does not know.
    static let unsupportedSignature = S3Error(
        .invalidRequest, "The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.")

    /// Parses the signature of `head`: nil when the request is not signed with SigV4.
    static func signed(_ head: HTTPRequestHead, query: [(name: String, value: [UInt8])]) throws(S3Error) -> Signed? {
        if let authorization = head["Authorization"] {
            guard !authorization.isEmpty else {
                throw S3Error(.accessDenied, "The Authorization header is empty; sign the request with an access key.",
                              refusal: .noCredential)
            }
            // SigV2 (`AWS ID:SIGNATURE`) is SigV2.signed's; anything else is malformed.
            guard authorization.hasPrefix("AWS4-HMAC-SHA256 ") else {
                throw S3Error(.invalidArgument, "Unsupported Authorization Type.")
            }
            guard !query.contains(where: { $0.name == "X-Amz-Algorithm" || $0.name == "X-Amz-Signature" }) else {
                throw S3Error(.invalidArgument, "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter "
                              + "or the Authorization header should be specified.")
            }
            var fields: [String: String] = [:]
            for part in authorization.dropFirst("AWS4-HMAC-SHA256 ".count).split(separator: ",") {
                let pair = part.trimmingOWS().split(separator: "=", maxSplits: 1)
                if pair.count == 2 { fields[String(pair[0])] = String(pair[1]) }
            }
            guard let credential = fields["Credential"], let headers = fields["SignedHeaders"],
                  let signature = fields["Signature"] else {
                throw S3Error(.authorizationHeaderMalformed, "The Authorization header lacks Credential, SignedHeaders or Signature.")
            }
            guard let amzDate = head["x-amz-date"] else {
                throw S3Error(.accessDenied, "A signed request needs X-Amz-Date.", refusal: .badSignature)
            }
            guard let payloadHash = head["x-amz-content-sha256"] else {
                throw S3Error(.invalidRequest, "A signed S3 request needs x-amz-content-sha256.")
            }
            return try parse(credential: Array(credential.utf8), signedHeaders: Array(headers.utf8),
                             signature: Array(signature.utf8), amzDate: amzDate, payloadHash: payloadHash, expires: nil)
        }
        return try presigned(head, query: query)
    }

    /// Parses a presigned URL's signature: nil when the query has no X-Amz-Algorithm.
    private static func presigned(_ head: HTTPRequestHead, query: [(name: String, value: [UInt8])]) throws(S3Error) -> Signed? {
        // One pass over the query for the parameters of a presigned URL. Each may come once: the
        // canonical query leaves X-Amz-Signature out, so a second one would be unsigned bytes
        // (and would make one signed URL many keys of the verified URLs).
        var algorithm: [UInt8]?, credential: [UInt8]?, headers: [UInt8]?, signature: [UInt8]?, amzDate: [UInt8]?,
            expiresText: [UInt8]?, token: [UInt8]?
        func take(_ slot: inout [UInt8]?, _ item: (name: String, value: [UInt8])) throws(S3Error) {
            guard slot == nil else {
                throw S3Error(.authorizationQueryParametersError, "The query parameter \(item.name) may be given only once.")
            }
            slot = item.value
        }
        for item in query where item.name.utf8.count > 6 && item.name.hasPrefix("X-Amz-") {
            switch item.name {
            case "X-Amz-Algorithm": try take(&algorithm, item)
            case "X-Amz-Credential": try take(&credential, item)
            case "X-Amz-SignedHeaders": try take(&headers, item)
            case "X-Amz-Signature": try take(&signature, item)
            case "X-Amz-Date": try take(&amzDate, item)
            case "X-Amz-Expires": try take(&expiresText, item)
            case "X-Amz-Security-Token": try take(&token, item)
            default: break
            }
        }
        guard let algorithm else { return nil }
        guard algorithm.elementsEqual("AWS4-HMAC-SHA256".utf8) else { throw unsupportedSignature }
        guard let credential, let headers, let signature, let amzDate,
              let expiresText, let expires = Int64(String(decoding: expiresText, as: UTF8.self)) else {
            throw S3Error(.authorizationQueryParametersError,
                          "A presigned URL needs X-Amz-Credential, X-Amz-Date, X-Amz-Expires, X-Amz-SignedHeaders and X-Amz-Signature.")
        }
        guard (1...604_800).contains(expires) else {
            throw S3Error(.authorizationQueryParametersError, "X-Amz-Expires must be between 1 and 604800 seconds (7 days).")
        }
        return try parse(credential: credential, signedHeaders: headers, signature: signature,
                         amzDate: String(decoding: amzDate, as: UTF8.self), payloadHash: head["x-amz-content-sha256"] ?? "UNSIGNED-PAYLOAD", expires: expires)
    }

    private static func parse(credential: [UInt8], signedHeaders: [UInt8], signature: [UInt8], amzDate: String,
                              payloadHash: String, expires: Int64?) throws(S3Error) -> Signed {
        let scope = credential.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        guard scope.count == 5, scope[4].elementsEqual("aws4_request".utf8), scope[1].count == 8 else {
            throw S3Error(.authorizationHeaderMalformed, "The credential must be ACCESS_KEY/YYYYMMDD/REGION/SERVICE/aws4_request.")
        }
        func text(_ bytes: ArraySlice<UInt8>) -> String { String(decoding: bytes, as: UTF8.self) }
        return Signed(accessKey: text(scope[0]), scopeDate: text(scope[1]), region: text(scope[2]), service: text(scope[3]),
                      signedHeaders: try headerNames(signedHeaders).map { text($0) },
                      signature: text(lowercased(signature[...])), amzDate: amzDate, payloadHash: payloadHash, expires: expires)
    }

    /// Most names SignedHeaders may list, and the longest it may be: far more than any client
    /// signs, and a bound on what an unauthenticated request makes blobd hash.
    static let maxSignedHeaders = 64
    static let maxSignedHeadersLength = 2048

    /// SignedHeaders' names, lowercased: each once, in ascending order, as SigV4 defines them.
    /// Checked before any key is looked up, so that a long or repeated list costs nothing.
    static func headerNames(_ list: [UInt8]) throws(S3Error) -> [ArraySlice<UInt8>] {
        guard list.count <= maxSignedHeadersLength else {
            throw S3Error(.authorizationHeaderMalformed, "SignedHeaders is longer than \(maxSignedHeadersLength) bytes.")
        }
        let names = list.split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: false).map(lowercased)
        guard names.count <= maxSignedHeaders else {
            throw S3Error(.authorizationHeaderMalformed, "SignedHeaders names more than \(maxSignedHeaders) headers.")
        }
        guard names.allSatisfy({ !$0.isEmpty }), zip(names, names.dropFirst()).allSatisfy({ $0.lexicographicallyPrecedes($1) }) else {
            throw S3Error(.authorizationHeaderMalformed, "SignedHeaders must list lowercase header names, each once, sorted and separated by ';'.")
        }
        return names
    }

    /// The first `x-amz-*` header of `headers` that `signed` does not cover, if any: one added
    /// to a signed request (or to a presigned URL) would change what it does.
    static func unsignedAmzHeader(_ headers: [(name: String, value: String)], signed: Signed) -> String? {
        for header in headers where header.name.utf8.count > 6 && header.name.utf8.prefix(6).elementsEqual("x-amz-".utf8, by: {
            $0 | 0x20 == $1
        }) {
            let name = header.name.lowercased()
            if !signed.signedHeaders.contains(name) { return name }
        }
        return nil
    }

    /// The first header `signed` lists that the request does not carry, if any.
    static func absentSignedHeader(_ headers: [(name: String, value: String)], signed: Signed) -> String? {
        signed.signedHeaders.first { name in !headers.contains { $0.name.caseInsensitiveEquals(name) } }
    }

    /// ASCII `bytes` lowercased, without a copy when they already are (as clients send them).
    private static func lowercased(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        guard bytes.contains(where: { (0x41...0x5A).contains($0) }) else { return bytes }
        return ArraySlice(bytes.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 })
    }

    /// The canonical request (AWS: "Create a canonical request"), as bytes: it is built on every
    /// signed request, so it is assembled in one buffer, without Strings.
    static func canonicalRequest(method: String, rawPath: [UInt8], query: [(name: String, value: [UInt8])],
                                 headers: [(name: String, value: String)], signed: Signed) -> [UInt8] {
        let newline = UInt8(ascii: "\n")
        var out: [UInt8] = []
        out.reserveCapacity(512)
        out += method.utf8
        out.append(newline)
        if rawPath.isEmpty { out.append(UInt8(ascii: "/")) } else { out += rawPath }
        out.append(newline)
        // Every name and value is encoded once into `encoded`; the pairs are sorted only when the
        // client did not send them in order already (the SDKs do).
        var encoded: [UInt8] = []
        encoded.reserveCapacity(512)
        var pairs: [(name: Range<Int>, value: Range<Int>)] = []
        pairs.reserveCapacity(query.count)
        for item in query where item.name != "X-Amz-Signature" {
            let nameStart = encoded.count
            PercentEncoding.appendComponent(item.name.utf8, to: &encoded)
            let valueStart = encoded.count
            PercentEncoding.appendComponent(item.value, to: &encoded)
            pairs.append((nameStart..<valueStart, valueStart..<encoded.count))
        }
        func precedes(_ a: (name: Range<Int>, value: Range<Int>), _ b: (name: Range<Int>, value: Range<Int>)) -> Bool {
            let (nameA, nameB) = (encoded[a.name], encoded[b.name])
            return nameA.elementsEqual(nameB) ? encoded[a.value].lexicographicallyPrecedes(encoded[b.value])
                : nameA.lexicographicallyPrecedes(nameB)
        }
        if !zip(pairs, pairs.dropFirst()).allSatisfy({ !precedes($1, $0) }) { pairs.sort(by: precedes) }
        for (index, pair) in pairs.enumerated() {
            if index > 0 { out.append(UInt8(ascii: "&")) }
            out += encoded[pair.name]
            out.append(UInt8(ascii: "="))
            out += encoded[pair.value]
        }
        out.append(newline)
        appendCanonicalHeaders(headers, signed: signed, to: &out)
        out.append(newline)
        for (index, name) in signed.signedHeaders.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ";")) }
            out += name.utf8
        }
        out.append(newline)
        out += signed.payloadHash.utf8
        return out
    }

    /// The canonical headers: `name:value` and a newline for each signed header, in the order
    /// signed, values trimmed and joined with commas.
    static func appendCanonicalHeaders(_ headers: [(name: String, value: String)], signed: Signed, to out: inout [UInt8]) {
        for name in signed.signedHeaders {
            out += name.utf8
            out.append(UInt8(ascii: ":"))
            var first = true
            for header in headers where header.name.caseInsensitiveEquals(name) {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                appendCollapsingSpaces(header.value.utf8, to: &out)
            }
            out.append(UInt8(ascii: "\n"))
        }
    }

    /// The string to sign for `canonicalRequest`.
    static func stringToSign(_ signed: Signed, canonicalRequest: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(160)
        out += "AWS4-HMAC-SHA256\n".utf8
        out += signed.amzDate.utf8
        out.append(UInt8(ascii: "\n"))
        for part in [signed.scopeDate, signed.region, signed.service] {
            out += part.utf8
            out.append(UInt8(ascii: "/"))
        }
        out += "aws4_request\n".utf8
        appendHex(SHA256Hasher.hash(canonicalRequest), to: &out)
        return out
    }

    private static func appendHex(_ bytes: [UInt8], to out: inout [UInt8]) {
        for byte in bytes {
            out.append(hexDigit(byte >> 4))
            out.append(hexDigit(byte & 0xF))
        }
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }

    static func scope(_ signed: Signed) -> String {
        "\(signed.scopeDate)/\(signed.region)/\(signed.service)/aws4_request"
    }

    /// The signing key: HMAC chain over date, region, service and "aws4_request".
    static func signingKey(secret: String, _ signed: Signed) -> [UInt8] {
        let scope = KeyScope(secret: secret, date: signed.scopeDate, region: signed.region, service: signed.service)
        if let known = signingKeys.withLock({ $0[scope] }) { return known }
        var key = hmac(Array(("AWS4" + secret).utf8), Array(signed.scopeDate.utf8))
        key = hmac(key, Array(signed.region.utf8))
        key = hmac(key, Array(signed.service.utf8))
        key = hmac(key, Array("aws4_request".utf8))
        signingKeys.withLock { keys in
            if keys.count >= 256 { keys.removeAll() }
            keys[scope] = key
        }
        return key
    }

    /// What a signing key is derived from.
    private struct KeyScope: Hashable {
        var secret, date, region, service: String
    }

    /// Signing keys by secret and scope: a key serves every request of its day and region, so
    /// its four HMACs are computed once (kept in memory beside the secrets themselves).
    private static let signingKeys = Mutex<[KeyScope: [UInt8]]>([:])

    /// The hex signature of `stringToSign`.
    static func signature(secret: String, _ signed: Signed, stringToSign: [UInt8]) -> String {
        hex(hmac(signingKey(secret: secret, signed), stringToSign))
    }

    /// HMAC-SHA256 (`hmacSHA256`).
    static func hmac(_ key: [UInt8], _ data: [UInt8]) -> [UInt8] {
        hmacSHA256(key: key, data)
    }

    /// Seconds since the epoch of `YYYYMMDDTHHMMSSZ`, or nil.
    static func seconds(ofAmzDate text: String) -> Int64? {
        let bytes = Array(text.utf8)
        guard bytes.count == 16, bytes[8] == UInt8(ascii: "T"), bytes[15] == UInt8(ascii: "Z") else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for byte in bytes[range] {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int64(byte - 0x30)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(4..<6), let day = number(6..<8),
              let hour = number(9..<11), let minute = number(11..<13), let second = number(13..<15),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        return HTTPDate.seconds(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
    }

    /// Appends a header value with its leading and trailing spaces dropped and every run of
    /// spaces inside turned into one space (AWS: "Trimall").
    private static func appendCollapsingSpaces(_ value: String.UTF8View, to out: inout [UInt8]) {
        var pendingSpace = false
        var started = false
        for byte in value {
            if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") {
                pendingSpace = started
            } else {
                if pendingSpace { out.append(UInt8(ascii: " ")) }
                out.append(byte)
                pendingSpace = false
                started = true
            }
        }
    }
}

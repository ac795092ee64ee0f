import HTTPCore
import BlobStore
import MicroHTTPD

#if canImport(Glibc)
import Glibc
import Access
#endif

/// Who may make an S3 request: SigV4 (header or presigned URL) or SigV2 checked against the
/// access key's secret, then the key's grants.
extension S3Service {
    /// A request whose signature checked out: what it signed (nil for SigV2, which signs no
    /// chunks), the key's secret, and the principal it makes.
    struct Authorized {
        let signed: SigV4.Signed?
        /// The access key that signed, whatever the signature version.
        let accessKey: String
        let secret: String
        /// The key's own grants.
        let grants: Grants
        /// The catalog key it is, nil for a tokens-file line.
        let keyID: String?
        /// Its name: the catalog key's, or the tokens-file line's `name=`.
        let keyName: String?

        init(signed: SigV4.Signed?, accessKey: String, key: AccessPolicy.S3Key) {
            self.signed = signed
            self.accessKey = accessKey
            self.secret = key.secret
            self.grants = key.grants
            self.keyID = key.keyID
            self.keyName = key.keyName
        }
    }

    /// The SigV4 and SigV2 authenticator: the principal of an S3 request.
    struct SignatureAuthenticator: Authenticator {
        struct Request {
            let head: HTTPRequestHead
            let query: [(name: String, value: [UInt8])]
        }

        let service: S3Service

        func authenticate(_ request: Request) throws(S3Error) -> Principal {
            service.principal(try service.authenticate(request.head, query: request.query))
        }
    }

    /// The caller a checked signature (or none) makes: the key's grants and those of every caller
    /// (with a credential: of every authenticated caller).
    func principal(_ authorized: Authorized?) -> Principal {
        guard let authorized else { return .anonymous(access.anonymousGrants) }
        let identity: Principal.Identity = authorized.keyID.map { .key($0) } ?? .accessKey(authorized.accessKey)
        return Principal(identity, grants: authorized.grants.union(access.authenticatedGrants), keyName: authorized.keyName)
    }

    /// The caller, if its grants meet `requirement`; AccessDenied otherwise. Either way the
    /// caller is noted on `head` for the access log.
    func authorize(_ authorized: Authorized?, _ requirement: AccessRequirement,
                   noting head: HTTPRequestHead) throws(S3Error) -> Principal {
        let caller = principal(authorized)
        head.note(caller)
        guard caller.grants.permits(requirement) else {
            if caller.isAnonymous {
                throw S3Error(.accessDenied, "Anonymous access is not allowed here; sign the request with an access key.",
                              refusal: .noCredential)
            }
            throw S3Error(.accessDenied, "Access Denied: the access key's grants do not allow \(requirement).")
        }
        return caller
    }

    /// The signature's access key, once the signature checked out; nil for an unsigned request,
    /// and in open access (no tokens file), where signatures are not checked. `presigned`: a
    /// request without an Authorization header, with its entry among the verified URLs if it has one.
    func authenticate(_ head: HTTPRequestHead, query: [(name: String, value: [UInt8])],
                      presigned: (key: VerifiedURLs.Key, entry: VerifiedURLs.Entry?)? = nil) throws(S3Error) -> Authorized? {
        guard !access.isOpen else { return nil }
        if let known = presigned?.entry, let key = access.s3Key(known.signed.accessKey), key.secret == known.secret {
            try Self.checkSignedHeaders(head, known.signed)
            try Self.checkTime(known.signed, signedAt: known.signedAt, now: store.now())
            return Authorized(signed: known.signed, accessKey: known.signed.accessKey, key: key)
        }
        if let signed = try SigV2.signed(head, query: query) {
            return try authenticate(head, query: query, sigV2: signed)
        }
        guard let signed = try SigV4.signed(head, query: query) else { return nil }
        guard let key = access.s3Key(signed.accessKey) else { throw unknownAccessKey(signed.accessKey) }
        guard let signedAt = SigV4.seconds(ofAmzDate: signed.amzDate) else {
            throw S3Error(.accessDenied, "X-Amz-Date must be YYYYMMDDTHHMMSSZ.", refusal: .badSignature)
        }
        guard signed.amzDate.hasPrefix(signed.scopeDate), signed.service == "s3" else {
            throw S3Error(.authorizationHeaderMalformed, "The credential scope must name the request's date and the service s3.")
        }
        guard signed.signedHeaders.contains("host") else {
            throw S3Error(.accessDenied, "The Host header must be signed.", refusal: .badSignature)
        }
        try Self.checkSignedHeaders(head, signed)
        try Self.checkTime(signed, signedAt: signedAt, now: store.now())
        let canonical = SigV4.canonicalRequest(method: head.method, rawPath: head.path, query: query,
                                               headers: head.headers, signed: signed)
        let expected = SigV4.signature(secret: key.secret, signed, stringToSign: SigV4.stringToSign(signed, canonicalRequest: canonical))
        guard AccessPolicy.constantTimeEqual(Array(expected.utf8), Array(signed.signature.utf8)) else {
            throw S3Error(.signatureDoesNotMatch,
                          "The request signature we calculated does not match the signature you provided. Check your key and signing method.")
        }
        if let presigned, signed.expires != nil {
            verifiedURLs.insert(presigned.key, head: head, query: query, signed: signed, secret: key.secret, signedAt: signedAt)
        }
        return Authorized(signed: signed, accessKey: signed.accessKey, key: key)
    }

    /// Every `x-amz-*` header the request carries must be signed, in a presigned URL as in a
    /// header-signed request, or it could be added later (a copy source, a range of one, metadata);
    /// and every header signed must be there.
    private static func checkSignedHeaders(_ head: HTTPRequestHead, _ signed: SigV4.Signed) throws(S3Error) {
        if let unsigned = SigV4.unsignedAmzHeader(head.headers, signed: signed) {
            throw S3Error(.accessDenied, "There were headers present in the request which were not signed: \(unsigned)",
                          refusal: .badSignature)
        }
        if let absent = SigV4.absentSignedHeader(head.headers, signed: signed) {
            throw S3Error(.accessDenied, "The signed header \(absent) is not in the request.", refusal: .badSignature)
        }
    }

    /// A copy reads its source: the caller needs `read` on it as well as write on the
    /// destination (S3: s3:GetObject on the source).
    func checkCopySourceRead(_ caller: Principal, source: BlobKey) throws(S3Error) {
        guard caller.grants.allows(.read, key: source.rawValue.utf8) else {
            throw S3Error(.accessDenied, "Access Denied: a copy needs read on its source, \(source).")
        }
    }

    /// InvalidAccessKeyId for an access key id that is not in force; its refusal is `expired`
    /// for a catalog key past its expiry.
    func unknownAccessKey(_ id: String) -> S3Error {
        S3Error(.invalidAccessKeyId, "The AWS access key ID you provided does not exist in our records.",
                refusal: access.directory.hasExpired(accessKeyID: id) ? .expired : .unknownCredential)
    }

    /// A presigned URL is valid from its date until it expires; a header-signed request within
    /// 15 minutes of `now` (the store's clock) either way.
    static func checkTime(_ signed: SigV4.Signed, signedAt: Int64, now: Int64) throws(S3Error) {
        if let expires = signed.expires {
            guard now <= signedAt + expires else { throw S3Error(.accessDenied, "Request has expired", refusal: .expired) }
            guard signedAt <= now + maxSkew else {
                throw S3Error(.accessDenied, "Request is not valid yet", refusal: .expired)
            }
        } else if abs(now - signedAt) > maxSkew {
            throw S3Error(.requestTimeTooSkewed, "The difference between the request time and the current time is too large.")
        }
    }
}

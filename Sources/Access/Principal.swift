import BlobStore
import MicroHTTPD
import HTTPCore

/// Who makes a request, once its credential checked out: every dialect's authenticator yields
/// one, with its grants, and `Grants.permits` decides what it may do.
public struct Principal: Sendable, Equatable {
    /// Whose credential it is.
    public enum Identity: Sendable, Equatable {
        /// No credential.
        case anonymous
        /// A bearer token, by the first 16 bytes of its SHA-256 in hex (never the token itself).
        case bearer(String)
        /// An S3 access key of the tokens file, by its id.
        case accessKey(String)
        /// A key of the catalog (made at run time or by a bootstrap file), by its id.
        case key(String)
    }

    public let identity: Identity
    /// What the caller may do: the credential's grants and those of every caller.
    public let grants: Grants
    /// The credential's own name (the access log's `principal.name`, `/v1/whoami`'s `name`): a
    /// catalog key's, or a tokens-file line's `name=`; nil otherwise.
    public let keyName: String?

    public init(_ identity: Identity, grants: Grants, keyName: String? = nil) {
        self.identity = identity
        self.grants = grants
        self.keyName = keyName
    }

    /// A caller without a credential, holding `grants`.
    public static func anonymous(_ grants: Grants) -> Principal {
        Principal(.anonymous, grants: grants)
    }

    /// How logs and `/v1/whoami` name the caller: `anonymous`, `token:DIGEST` (the first 16
    /// bytes of the token's SHA-256, never the token), `s3:ACCESS_KEY_ID` (tokens-file lines) or
    /// `key:ID` (keys of the catalog, by token or access key id alike).
    public var name: String {
        switch identity {
        case .anonymous: "anonymous"
        case .bearer(let digest): "token:" + digest
        case .accessKey(let id): "s3:" + id
        case .key(let id): "key:" + id
        }
    }

    /// True for a caller without a credential.
    public var isAnonymous: Bool { identity == .anonymous }

    /// What the caller may do to the key: replace, only create, or nothing.
    public func write(_ key: BlobKey) -> Grants.WriteAllowance? {
        grants.write(key: key.rawValue.utf8)
    }
}

extension HTTPRequestHead {
    /// Notes `principal` on the request, for the access log at its completion (its name, and a
    /// catalog key's own name).
    public func note(_ principal: Principal) {
        annotation.principal = HTTPRequestAnnotation.Principal(name: principal.name, label: principal.keyName)
    }
}

/// Turns a request's credential into a principal: `.anonymous` when the request carries none
/// of its kind, a failure when it carries one that does not check out.
public protocol Authenticator: Sendable {
    /// What the authenticator reads (a request head; for S3 also the decoded query).
    associatedtype Request
    associatedtype Failure: Error
    func authenticate(_ request: Request) throws(Failure) -> Principal
}

extension AccessPolicy {
    /// The principal of a /v1 request, if it may do what `requirement` says; otherwise 401 (no
    /// credential, or one that does not check out) or 403 (its grants fall short). A credential
    /// adds to what every caller may do. A request every caller may make goes through even with
    /// a credential that does not check out, as it did before grants. The principal, once known,
    /// is noted on `head` for the access log, also when its grants fall short.
    public func authorize(_ head: HTTPRequestHead, _ requirement: AccessRequirement) throws(HTTPError) -> Principal {
        let anonymous = anonymousGrants
        let principal: Principal
        do throws(HTTPError) {
            principal = try BearerAuthenticator(self).authenticate(head, adding: anonymous)
        } catch {
            guard anonymous.permits(requirement) else { throw error }
            let caller = Principal.anonymous(anonymous)
            head.note(caller)
            return caller
        }
        head.note(principal)
        guard principal.grants.permits(requirement) else {
            if principal.isAnonymous { throw .unauthorized(.noCredential, "This request needs a bearer token.") }
            throw .forbidden(requirement)
        }
        return principal
    }
}

/// Bearer tokens from the tokens file (`Authorization: Bearer TOKEN`).
public struct BearerAuthenticator: Authenticator {
    let access: AccessPolicy

    public init(_ access: AccessPolicy) {
        self.access = access
    }

    /// `.anonymous` without an Authorization header; 401 for another scheme or an unknown token.
    public func authenticate(_ head: HTTPRequestHead) throws(HTTPError) -> Principal {
        try authenticate(head, adding: access.anonymousGrants)
    }

    /// The principal, with `anonymous` (what every caller may do) and what every caller with a
    /// credential may do (authenticated-read ACLs) added to its own grants.
    func authenticate(_ head: HTTPRequestHead, adding anonymous: Grants) throws(HTTPError) -> Principal {
        guard let header = head["Authorization"] else { return .anonymous(anonymous) }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw .unauthorized(.unknownCredential, "The Authorization header must be 'Bearer TOKEN'.")
        }
        let presented = SHA256Hasher.hash(Array(parts[1].trimmingOWS().utf8))
        guard let found = access.bearerGrants(digest: presented) else {
            let expired = access.directory.hasExpired(tokenHash: presented)
            throw .unauthorized(expired ? .expired : .unknownCredential, "The bearer token is not known.")
        }
        let identity: Principal.Identity = found.keyID.map { .key($0) } ?? .bearer(hex(presented.prefix(16)))
        return Principal(identity, grants: found.grants.union(access.authenticatedGrants(adding: anonymous)), keyName: found.name)
    }
}

extension AccessPolicy {
    /// Checks again, as a long body ends and before its commit, that the caller may still do
    /// what `requirement` says: 401 when its credential was revoked or expired since the request
    /// began (on this node at once, on others after their next poll), 403 when its grants no
    /// longer meet it.
    public func recheck(_ principal: Principal, _ requirement: AccessRequirement) throws(HTTPError) {
        let anonymous = anonymousGrants
        var grants = anonymous
        if !principal.isAnonymous {
            guard let own = self.grants(ofPrincipal: principal.name) else {
                throw .unauthorized(.unknownCredential, "The credential was revoked or expired while the body arrived; nothing was stored.")
            }
            grants = own.union(authenticatedGrants(adding: anonymous))
        }
        guard grants.permits(requirement) else { throw .forbidden(requirement) }
    }
}

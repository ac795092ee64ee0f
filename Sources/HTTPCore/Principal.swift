import BlobStore
import MicroHTTPD

/// Who makes a request, once its credential checked out: every dialect's authenticator yields
/// one, and `AccessPolicy.allows` decides what it may do.
public struct Principal: Sendable, Equatable {
    /// Whose credential it is.
    public enum Identity: Sendable, Equatable {
        /// No credential.
        case anonymous
        /// A bearer token, by the first 16 bytes of its SHA-256 in hex (never the token itself).
        case bearer(String)
        /// An S3 access key, by its id.
        case accessKey(String)
    }

    public let identity: Identity
    /// What the credential may do.
    public let scopes: Set<Scope>

    public init(_ identity: Identity, scopes: Set<Scope>) {
        self.identity = identity
        self.scopes = scopes
    }

    /// A caller without a credential.
    public static let anonymous = Principal(.anonymous, scopes: [])
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
    /// The one authorization decision, for every dialect: whether `principal` may do `action`
    /// on `key` (nil: a bucket, a listing). Without a tokens file anyone may do anything; with
    /// `--public-read` anyone may read; otherwise a credential's scopes decide. The key is not
    /// consulted yet: scopes hold for every key.
    public func allows(_ principal: Principal, _ action: Scope, key: BlobKey? = nil) -> Bool {
        switch principal.identity {
        case .anonymous: isOpen || (publicRead && action == .read)
        case .bearer, .accessKey: principal.scopes.contains(action)
        }
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
        guard let header = head["Authorization"] else { return .anonymous }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw .unauthorized("The Authorization header must be 'Bearer TOKEN'.")
        }
        let presented = SHA256Hasher.hash(Array(parts[1].trimmingOWS().utf8))
        guard let scopes = access.bearerScopes(digest: presented) else { throw .unauthorized("The bearer token is not known.") }
        return Principal(.bearer(hex(presented.prefix(16))), scopes: scopes)
    }
}

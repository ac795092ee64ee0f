import BlobStore

/// Why a request was refused for its credential or its grants (a 401, or a 403 that is not a
/// quota): `blobd_auth_refusals_total{dialect,reason}` counts them. Each dialect decides the
/// reason where it refuses and counts it in its one `failure(...)` function.
public enum AuthRefusal: String, Sendable, CaseIterable {
    /// No credential, where every caller may not do what the request asks.
    case noCredential = "no_credential"
    /// A credential blobd does not know: an unknown bearer token or access key id, or an
    /// Authorization header of another scheme.
    case unknownCredential = "unknown_credential"
    /// An S3 signature that does not check out, or that is malformed or leaves headers unsigned.
    case badSignature = "bad_signature"
    /// A credential past its time: a catalog key past its expiry, a presigned URL past its
    /// `Expires` (or not valid yet), a signed request outside the 15-minute clock skew.
    case expired
    /// The credential's grants do not allow the request.
    case forbidden
    /// The key exists and the credential may only create (grant `create`).
    case createOnly = "create_only"

    /// The dialects `blobd_auth_refusals_total` counts, each with every reason (0 until one).
    public enum Dialect: String, Sendable, CaseIterable {
        case v1, s3
    }
}

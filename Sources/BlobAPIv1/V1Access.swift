import BlobStore
import HTTPCore
import MicroHTTPD
import Access

/// What a /v1 request needs of the caller's grants: its route's need, made concrete with the key,
/// prefix or upload the request names. `Grants.permits` decides (`AccessPolicy.authorize`).
extension BlobService {
    func requirement(_ need: V1Route.Need, _ head: HTTPRequestHead, _ raw: ArraySlice<UInt8>) throws(HTTPError) -> AccessRequirement {
        switch need {
        case .nothing: return .nothing
        case .anyKey(let action): return .anyKey(action)
        case .everywhere(let action): return .everywhere(action)
        case .bucket(let action):
            // A name that is no bucket needs a grant on everything; the handler answers 404.
            guard let bucket = try? Self.bucketName(raw) else { return .everywhere(action) }
            return .wholeBucket(action, bucket)
        case .namedBucket(let action):
            guard let bucket = try? Self.bucketName(raw) else { return .someGrant }
            return .wholeBucket(action, bucket)
        case .someGrant: return .someGrant
        case .listing: return .listing(Self.listedPrefix(head))
        case .pathKey(let action):
            if action == .read, let folder = try? Self.folder(raw) { return .listing(folder) }
            // A path that is no valid key needs a grant on every key; the handler answers 400.
            guard let key = try? Self.key(raw) else { return .anyKey(action) }
            return .key(action, key.bytes)
        case .newUpload(let action):
            guard let metadata = try? TusHeaders.metadata(head["Upload-Metadata"] ?? ""), let named = metadata["key"] else {
                return .anyKey(action)
            }
            guard let key = try? BlobKey(validating: named) else { return .anyKey(action) }
            return .key(action, key.bytes)
        case .upload(let action):
            let upload: UploadRecord
            do throws(StoreError) {
                upload = try store.upload(Self.uploadID(raw))
            } catch {
                switch error {
                // An unknown or expired upload: any grant lets the handler answer 404 or 410.
                case .uploadNotFound, .uploadExpired: return .someGrant
                // A catalog that cannot be read decides nothing: it never widens access.
                default: throw .unavailable("The catalog could not be read to decide access to the upload; try again.")
                }
            }
            return upload.key.map { .key(action, $0.bytes) } ?? .anyKey(action)
        }
    }

    /// The `prefix` query parameter of a listing ("" when absent or not decodable, which the
    /// listing itself refuses).
    static func listedPrefix(_ head: HTTPRequestHead) -> [UInt8] {
        PercentEncoding.decodeQuery(head.query ?? [])?.first { $0.name == "prefix" }?.value ?? []
    }
}

extension BlobService {
    /// GET /v1/whoami: the caller's principal, the credential's own name when it has one (a
    /// catalog key's, a tokens-file line's `name=`), and its grants (its own and every caller's).
    /// A credential that does not check out is 401 here, even where anonymous callers may do
    /// something.
    func whoami(_ head: HTTPRequestHead) throws -> HTTPResponse {
        let caller = try BearerAuthenticator(access).authenticate(head)
        var members: [(String, JSON)] = [("principal", .string(caller.name))]
        if let name = caller.keyName { members.append(("name", .string(name))) }
        members.append(("grants", .array(Grants(caller.grants.list).list.map { .string($0.description) })))  // each grant once
        return Self.jsonResponse(status: 200, .object(members))
    }
}

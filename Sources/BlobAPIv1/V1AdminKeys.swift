import BlobStore
import Foundation
import HTTPCore
import MicroHTTPD
import Access

/// `/v1/admin/keys`: keys made and revoked at run time, shared by every node through the
/// catalog (needs `admin:*`). A secret appears only in the answer that creates it; the catalog
/// keeps the token as a SHA-256. The tokens file's credentials are listed too, read-only.
extension BlobService {
    /// Largest JSON body an admin request may send.
    static let maxAdminBody = 64 * 1024

    /// POST /v1/admin/keys `{"name", "grants": [...], "expires_in": SECONDS?}`: 201 with the secrets.
    func createKey(_ head: HTTPRequestHead) throws -> HTTPRequestAction {
        try Self.requireJSON(head)
        return .receive(BufferedBody(limit: Self.maxAdminBody, committers: committers) { [self] body in
            do {
                let request = try Self.jsonObject(body)
                let name = try Self.keyName(request["name"])
                let grants = try Self.grants(request["grants"])
                let now = store.now()
                let expires = try Self.expiresIn(request["expires_in"]).map { now + $0 }
                let token = KeyFactory.token(), secret = KeyFactory.secret()
                let key = KeyRecord(id: KeyFactory.keyID(), name: name, grants: grants, tokenHash: SHA256Hasher.hash(Array(token.utf8)),
                                    accessKeyID: KeyFactory.accessKeyID(), secretAccessKey: secret, created: now, expires: expires)
                try catalogKeys().insertKey(key)
                try access.directory.reload()
                var members = Self.json(key).members
                members.insert(("token", .string(token)), at: 3)
                members.insert(("secret_access_key", .string(secret)), at: 5)
                return Self.jsonResponse(status: 201, .object(members), headers: [("Location", "/v1/admin/keys/" + key.id)])
            } catch {
                return failure(error)
            }
        })
    }

    /// GET /v1/admin/keys: every key, without secrets; the tokens file's marked read-only.
    func listKeys() throws -> HTTPResponse {
        try access.directory.reloadIfChanged()
        let keys = access.directory.keys.map { Self.json($0) } + access.fileCredentials.map(Self.json)
        return Self.jsonResponse(status: 200, .object([("keys", .array(keys.map { .object($0.members) }))]))
    }

    /// GET /v1/admin/keys/ID.
    func showKey(_ id: String) throws -> HTTPResponse {
        try access.directory.reloadIfChanged()
        if let key = access.directory.keys.first(where: { $0.id == id }) { return Self.jsonResponse(status: 200, .object(Self.json(key).members)) }
        if let file = access.fileCredentials.first(where: { $0.principal == id }) {
            return Self.jsonResponse(status: 200, .object(Self.json(file).members))
        }
        throw StoreError.keyNotFound
    }

    /// PUT /v1/admin/keys/ID/grants `{"grants": [...]}`: replaces a key's grants.
    func replaceGrants(_ head: HTTPRequestHead, id: String) throws -> HTTPRequestAction {
        try Self.requireJSON(head)
        try refuseFileCredential(id)
        return .receive(BufferedBody(limit: Self.maxAdminBody, committers: committers) { [self] body in
            do {
                let grants = try Self.grants(try Self.jsonObject(body)["grants"])
                let key = try catalogKeys().replaceGrants(ofKey: id, with: grants)
                try access.directory.reload()
                return Self.jsonResponse(status: 200, .object(Self.json(key).members))
            } catch {
                return failure(error)
            }
        })
    }

    /// DELETE /v1/admin/keys/ID: revokes at once on this node, within 2 s on every other.
    func revokeKey(_ id: String) throws -> HTTPResponse {
        try refuseFileCredential(id)
        try catalogKeys().revokeKey(id)
        try access.directory.reload()
        return HTTPResponse(status: 204, headers: [Self.noStore])
    }

    private func catalogKeys() throws(HTTPError) -> any AccessIndex {
        guard let catalog = access.directory.catalog else { throw .unavailable("The keys of the index are not open yet.") }
        return catalog
    }

    private func refuseFileCredential(_ id: String) throws(HTTPError) {
        if access.fileCredentials.contains(where: { $0.principal == id }) {
            throw .conflict("This credential comes from the tokens file, which is read-only here; edit the file and send SIGHUP.")
        }
    }
}

/// The JSON of keys, and the checks of admin request bodies.
extension BlobService {
    struct Members { var members: [(String, JSON)] }

    static func json(_ key: KeyRecord) -> Members {
        Members(members: [
            ("id", .string(key.id)), ("name", .string(key.name)), ("grants", .array(key.grants.list.map { .string($0.description) })),
            ("access_key_id", .string(key.accessKeyID)), ("created", .string(HTTPDate.formatRFC3339(key.created))),
            ("expires", key.expires.map { .string(HTTPDate.formatRFC3339($0)) } ?? .null), ("source", .string(key.source.rawValue)),
            ("read_only", .bool(false)),
        ])
    }

    static func json(_ credential: AccessPolicy.FileCredential) -> Members {
        Members(members: [
            ("id", .string(credential.principal)), ("name", .string(credential.name ?? credential.principal)),
            ("grants", .array(credential.grants.list.map { .string($0.description) })),
            ("access_key_id", credential.accessKeyID.map { .string($0) } ?? .null), ("created", .null), ("expires", .null),
            ("source", .string("tokens-file")), ("read_only", .bool(true)),
        ])
    }

    static func requireJSON(_ head: HTTPRequestHead) throws(HTTPError) {
        let type = head["Content-Type"]?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
        guard type == "application/json" else { throw .unsupportedMediaType("Send the request as application/json.") }
    }

    /// The body as a JSON object; 400 for anything else (and 413 past the limit).
    static func jsonObject(_ body: [UInt8]?) throws -> [String: Any] {
        guard let body else { throw StoreError.tooLarge(limit: UInt64(maxAdminBody)) }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else {
            throw HTTPError.badRequest("The body must be a JSON object.")
        }
        return object
    }

    static func keyName(_ value: Any?) throws(HTTPError) -> String {
        guard let name = value as? String, (1...200).contains(name.utf8.count),
              !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw .badRequest("\"name\" must be 1 to 200 bytes of text without control characters.")
        }
        return name
    }

    static func grants(_ value: Any?) throws(HTTPError) -> Grants {
        guard let texts = value as? [String], texts.count <= 1000 else {
            throw .badRequest("\"grants\" must be a list of at most 1000 grants, each ACTION[:PATTERN].")
        }
        do throws(Grant.ParseError) {
            return try Grants(parsing: texts)
        } catch {
            throw .badRequest(error.description)
        }
    }

    /// `expires_in`: whole seconds, 1 to 10 years; nil when absent.
    static func expiresIn(_ value: Any?) throws(HTTPError) -> Int64? {
        guard let value, !(value is NSNull) else { return nil }
        // A JSON true or false is an NSNumber too, of type "c".
        guard let number = value as? NSNumber, String(cString: number.objCType) != "c",
              let seconds = Int64(exactly: number.doubleValue), (1...315_360_000).contains(seconds) else {
            throw .badRequest("\"expires_in\" must be a whole number of seconds from 1 to 315360000 (10 years).")
        }
        return seconds
    }
}

import BlobStore
import HTTPCore
import MicroHTTPD
import Access

/// One /v1 route: its path, its label in metrics and logs, and for each method it takes what the
/// method needs of the caller's grants and its handler. The 405 and its Allow header, the grant
/// check, the metrics label and the access log's key all come from the row (`BlobService.routes`).
struct V1Route: Sendable {
    /// The path a route answers: exactly `path`, or `prefix` and a parameter of at least
    /// `minimum` bytes after it (the raw key of a blob, an upload's id).
    enum Pattern: Sendable {
        case exact(String)
        case parameter(prefix: String, minimum: Int)
        /// `/v1/admin/buckets/BUCKET/NAME`: a bucket's setting; the parameter is the bucket.
        case bucketSetting(String)
    }

    /// Runs a method of the route, given its raw path parameter (empty for an exact path) and
    /// the caller, whose grants met the method's need.
    typealias Handler = @Sendable (BlobService, HTTPRequestHead, ArraySlice<UInt8>, Principal) throws -> HTTPRequestAction

    /// What a method needs of the caller's grants, by what it acts on.
    enum Need: Sendable, CustomStringConvertible {
        /// Nothing: operational endpoints, tus discovery.
        case nothing
        /// The action on the blob the path names; GET and HEAD of a folder (`photos/`) list it.
        case pathKey(Grant.Action)
        /// A listing of the `prefix` query parameter.
        case listing
        /// The action on a key not known yet (POST's content address).
        case anyKey(Grant.Action)
        /// The action on the key a tus creation names in its metadata (else any key).
        case newUpload(Grant.Action)
        /// The action on the key of the tus upload the path names.
        case upload(Grant.Action)
        /// The action on `*` (`admin:*` manages keys).
        case everywhere(Grant.Action)
        /// The action on every key of the bucket the path names (its settings need `admin`).
        case bucket(Grant.Action)
        /// The action on every key of the bucket the path names; a path that is no bucket's name
        /// needs some grant, so that the handler answers 400 (`PUT /v1/buckets/NAME`).
        case namedBucket(Grant.Action)
        /// Some grant at all (the bucket listing, which shows only the buckets the grants touch).
        case someGrant

        public var description: String {
            switch self {
            case .nothing: "-"
            case .pathKey(let action): action.rawValue
            case .listing: "read(prefix)"
            case .anyKey(let action): action.rawValue + "(*)"
            case .newUpload(let action): action.rawValue + "(metadata key)"
            case .upload(let action): action.rawValue + "(upload's key)"
            case .everywhere(let action): action.rawValue + ":*"
            case .bucket(let action), .namedBucket(let action): action.rawValue + "(bucket)"
            case .someGrant: "any"
            }
        }
    }

    struct Method: Sendable {
        let name: String
        let need: Need
        let handler: Handler

        init(_ name: String, _ need: Need, _ handler: @escaping Handler) {
            self.name = name
            self.need = need
            self.handler = handler
        }
    }

    let pattern: Pattern
    /// The pattern's bytes (the exact path, or the parameter's prefix), compared on every request.
    private let bytes: [UInt8]
    /// What follows the parameter (`/NAME` of a bucket setting), else empty.
    private let suffix: [UInt8]
    let label: String
    /// A tus route: `X-HTTP-Method-Override` applies, and every answer has `Tus-Resumable`.
    let isTus: Bool
    /// The path parameter is a blob's key, which the access log records.
    let parameterIsKey: Bool
    /// In the order the Allow header names them.
    let methods: [Method]

    init(_ pattern: Pattern, _ label: String, isTus: Bool = false, parameterIsKey: Bool = false, _ methods: [Method]) {
        self.pattern = pattern
        switch pattern {
        case .exact(let path): (bytes, suffix) = (Array(path.utf8), [])
        case .parameter(let prefix, _): (bytes, suffix) = (Array(prefix.utf8), [])
        case .bucketSetting(let name): (bytes, suffix) = (Array("/v1/admin/buckets/".utf8), Array(("/" + name).utf8))
        }
        self.label = label
        self.isTus = isTus
        self.parameterIsKey = parameterIsKey
        self.methods = methods
    }

    /// The Allow header's methods.
    var allowed: [String] { methods.map(\.name) }

    /// The raw parameter of `path` if this route answers it.
    func match(_ path: [UInt8]) -> ArraySlice<UInt8>? {
        switch pattern {
        case .exact:
            return path == bytes ? path[path.endIndex...] : nil
        case .parameter(_, let minimum):
            guard path.count >= bytes.count + minimum, path[..<bytes.count].elementsEqual(bytes) else { return nil }
            return path[bytes.count...]
        case .bucketSetting:
            guard path.count > bytes.count + suffix.count, path.starts(with: bytes), path.reversed().starts(with: suffix.reversed()) else {
                return nil
            }
            let bucket = path[bytes.count..<(path.count - suffix.count)]
            return bucket.contains(UInt8(ascii: "/")) ? nil : bucket
        }
    }
}

extension BlobService {
    /// Every route of the /v1 listener, one row each.
    static let routes: [V1Route] = [
        V1Route(.exact("/v1/blobs"), "/v1/blobs", [
            .init("GET", .listing) { service, head, _, _ in .respond(try service.list(head)) },
            .init("HEAD", .listing) { service, head, _, _ in .respond(try service.list(head)) },
            .init("POST", .anyKey(.write)) { service, head, _, caller in
                try service.receiveUpload(head, key: nil, onlyCreate: caller.grants.writeAnywhere == .createOnly,
                                          recheck: { try service.access.recheck(caller, .anyKey(.write)) })
            },
        ]),
        V1Route(.parameter(prefix: "/v1/blobs/", minimum: 0), "/v1/blobs/{key}", parameterIsKey: true, [
            .init("GET", .pathKey(.read)) { service, head, raw, _ in try service.readOrList(head, raw) },
            .init("HEAD", .pathKey(.read)) { service, head, raw, _ in try service.readOrList(head, raw) },
            .init("PUT", .pathKey(.write)) { service, head, raw, caller in
                let key = try BlobService.key(raw)
                return try service.receiveUpload(head, key: key, onlyCreate: caller.write(key) == .createOnly,
                                                 recheck: { try service.access.recheck(caller, .key(.write, key.bytes)) })
            },
            .init("DELETE", .pathKey(.delete)) { service, head, raw, _ in
                .respond(try service.delete(head, key: BlobService.key(raw)))
            },
        ]),
        V1Route(.exact("/v1/uploads"), "/v1/uploads", isTus: true, [
            .init("POST", .newUpload(.write)) { service, head, _, caller in try service.createUpload(head, caller) },
            .init("OPTIONS", .nothing) { service, _, _, _ in .respond(service.tusOptions()) },
        ]),
        V1Route(.parameter(prefix: "/v1/uploads/", minimum: 1), "/v1/uploads/{id}", isTus: true, [
            .init("HEAD", .upload(.write)) { service, head, raw, _ in try service.uploadOffset(head, id: BlobService.uploadID(raw)) },
            .init("PATCH", .upload(.write)) { service, head, raw, caller in
                try service.patchUpload(head, id: BlobService.uploadID(raw), caller)
            },
            .init("DELETE", .upload(.write)) { service, head, raw, _ in
                try service.terminateUpload(head, id: BlobService.uploadID(raw))
            },
            .init("OPTIONS", .nothing) { service, _, _, _ in .respond(service.tusOptions()) },
        ]),
        V1Route(.exact("/v1/admin/keys"), "/v1/admin/keys", [
            .init("GET", .everywhere(.admin)) { service, _, _, _ in .respond(try service.listKeys()) },
            .init("POST", .everywhere(.admin)) { service, head, _, _ in try service.createKey(head) },
        ]),
        V1Route(.parameter(prefix: "/v1/admin/keys/", minimum: 1), "/v1/admin/keys/{id}", [
            .init("GET", .everywhere(.admin)) { service, _, raw, _ in .respond(try service.showKey(try BlobService.keyID(raw))) },
            .init("PUT", .everywhere(.admin)) { service, head, raw, _ in
                try service.replaceGrants(head, id: try BlobService.keyID(raw, suffix: "/grants"))
            },
            .init("DELETE", .everywhere(.admin)) { service, _, raw, _ in .respond(try service.revokeKey(try BlobService.keyID(raw))) },
        ]),
        V1Route(.exact("/v1/shares"), "/v1/shares", [
            // The handlers authenticate: a link is its maker's, whatever every caller may do.
            .init("GET", .nothing) { service, head, _, _ in .respond(try service.listShares(head)) },
            .init("POST", .nothing) { service, head, _, _ in try service.createShare(head) },
        ]),
        V1Route(.parameter(prefix: "/v1/shares/", minimum: 1), "/v1/shares/{id}", [
            .init("DELETE", .nothing) { service, head, raw, _ in
                .respond(try service.revokeShare(head, id: String(decoding: raw, as: UTF8.self)))
            },
        ]),
        // A share link is the credential: the handler finds it, and checks its maker's grants.
        V1Route(.parameter(prefix: "/s/", minimum: 1), "/s/{id}", ["GET", "HEAD", "PUT", "POST", "PATCH", "DELETE", "OPTIONS"].map { name in
            V1Route.Method(name, .nothing) { service, head, raw, _ in try service.shareRequest(head, raw) }
        }),
        V1Route(.bucketSetting("public"), "/v1/admin/buckets/{bucket}/public", [
            .init("GET", .bucket(.admin)) { service, _, raw, _ in .respond(try service.publicPrefixes(bucket: BlobService.bucketName(raw))) },
            .init("PUT", .bucket(.admin)) { service, head, raw, _ in try service.setPublicPrefixes(head, bucket: BlobService.bucketName(raw)) },
        ]),
        V1Route(.bucketSetting("cors"), "/v1/admin/buckets/{bucket}/cors", [
            .init("GET", .bucket(.admin)) { service, _, raw, _ in .respond(try service.getCORS(bucket: BlobService.bucketName(raw))) },
            .init("PUT", .bucket(.admin)) { service, head, raw, _ in try service.putCORS(head, bucket: BlobService.bucketName(raw)) },
            .init("DELETE", .bucket(.admin)) { service, _, raw, _ in .respond(try service.deleteCORS(bucket: BlobService.bucketName(raw))) },
        ]),
        V1Route(.bucketSetting("lifecycle"), "/v1/admin/buckets/{bucket}/lifecycle", ["GET", "PUT", "DELETE"].map { name in
            V1Route.Method(name, .bucket(.admin)) { service, head, raw, _ in try service.lifecycle(head, bucket: BlobService.bucketName(raw)) }
        }),
        V1Route(.bucketSetting("notifications"), "/v1/admin/buckets/{bucket}/notifications", [
            .init("GET", .bucket(.admin)) { service, _, raw, _ in .respond(try service.getNotifications(bucket: BlobService.bucketName(raw))) },
            .init("PUT", .bucket(.admin)) { service, head, raw, _ in try service.putNotifications(head, bucket: BlobService.bucketName(raw)) },
            .init("DELETE", .bucket(.admin)) { service, _, raw, _ in
                .respond(try service.deleteNotifications(bucket: BlobService.bucketName(raw)))
            },
        ]),
        V1Route(.exact("/v1/admin/events"), "/v1/admin/events", [
            .init("GET", .everywhere(.admin)) { service, head, _, _ in .respond(try service.listEvents(head)) },
        ]),
        V1Route(.exact("/v1/buckets"), "/v1/buckets", [
            .init("GET", .someGrant) { service, _, _, caller in .respond(try service.listBuckets(caller)) },
        ]),
        V1Route(.parameter(prefix: "/v1/buckets/", minimum: 1), "/v1/buckets/{name}", [
            .init("PUT", .namedBucket(.write)) { service, head, raw, caller in try service.putBucket(head, raw, caller: caller) },
            .init("DELETE", .bucket(.delete)) { service, _, raw, _ in .respond(try service.deleteBucket(raw)) },
        ]),
        V1Route(.exact("/v1/whoami"), "/v1/whoami", [
            .init("GET", .nothing) { service, head, _, _ in .respond(try service.whoami(head)) },
        ]),
        // The web page: no credential to load it; its API calls carry the token.
        V1Route(.exact("/ui"), "/ui", ["GET", "HEAD"].map { name in
            V1Route.Method(name, .nothing) { service, _, _, _ in .respond(try service.webPageRedirect()) }
        }),
        V1Route(.parameter(prefix: "/ui/", minimum: 0), "/ui/{file}", ["GET", "HEAD"].map { name in
            V1Route.Method(name, .nothing) { service, head, raw, _ in .respond(try service.webPage(head, raw)) }
        }),
        V1Route(.exact("/healthz"), "/healthz", operational { _ in BlobService.textResponse("ok\n") }),
        V1Route(.exact("/readyz"), "/readyz", operational { service in try service.ready() }),
        V1Route(.exact("/metrics"), "/metrics", operational { service in
            BlobService.textResponse(service.metrics.render(blobs: try? service.store.totals(),
                                                            space: (service.store.freeBytes(), service.store.minimumFreeBytes)),
                         contentType: "text/plain; version=0.0.4; charset=utf-8")
        }),
    ]

    /// GET and HEAD of an operational endpoint: no grant needed.
    private static func operational(_ answer: @escaping @Sendable (BlobService) throws -> HTTPResponse) -> [V1Route.Method] {
        ["GET", "HEAD"].map { name in .init(name, .nothing) { service, _, _, _ in .respond(try answer(service)) } }
    }

    /// The route of a raw path, and its raw parameter.
    static func route(_ path: [UInt8]) throws(HTTPError) -> (route: V1Route, parameter: ArraySlice<UInt8>) {
        for route in routes {
            if let parameter = route.match(path) { return (route, parameter) }
        }
        throw .noRoute
    }

    /// A key's id from the path (`ID`, or `ID/grants` for `suffix`): letters, digits, `:` and `_`
    /// (tokens-file credentials are `token:…` and `s3:…`); 404 for anything else.
    static func keyID(_ raw: ArraySlice<UInt8>, suffix: String = "") throws(StoreError) -> String {
        guard raw.count > suffix.utf8.count, raw.suffix(suffix.utf8.count).elementsEqual(suffix.utf8) else { throw .keyNotFound }
        let id = raw.dropLast(suffix.utf8.count)
        guard id.count <= 300, id.allSatisfy({ $0 == 0x3A || $0 == 0x5F || $0 == 0x2D || (0x30...0x39).contains($0)
                                               || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }) else {
            throw .keyNotFound
        }
        return String(decoding: id, as: UTF8.self)
    }

    /// An upload's id from the path.
    static func uploadID(_ raw: ArraySlice<UInt8>) -> String {
        String(decoding: raw, as: UTF8.self)
    }

    /// GET or HEAD under /v1/blobs/: a folder's listing (a path ending in `/`), else the blob.
    func readOrList(_ head: HTTPRequestHead, _ raw: ArraySlice<UInt8>) throws -> HTTPRequestAction {
        if let folder = try Self.folder(raw) { return .respond(try list(head, folder: folder)) }
        return try readBlob(head, key: try Self.key(raw))
    }
}

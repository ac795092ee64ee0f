import BlobStore
import HTTPCore
import MicroHTTPD

/// One /v1 route: its path, its label in metrics and logs, and for each method it takes the
/// scope the method needs and its handler. The 405 and its Allow header, the scope check, the
/// metrics label and the access log's key all come from the row (`BlobService.routes`).
struct V1Route: Sendable {
    /// The path a route answers: exactly `path`, or `prefix` and a parameter of at least
    /// `minimum` bytes after it (the raw key of a blob, an upload's id).
    enum Pattern: Sendable {
        case exact(String)
        case parameter(prefix: String, minimum: Int)
    }

    /// Runs a method of the route, given its raw path parameter (empty for an exact path).
    typealias Handler = @Sendable (BlobService, HTTPRequestHead, ArraySlice<UInt8>) throws -> HTTPRequestAction

    struct Method: Sendable {
        let name: String
        /// The scope the method needs; nil for none (operational endpoints, tus discovery).
        let scope: Scope?
        let handler: Handler

        init(_ name: String, _ scope: Scope?, _ handler: @escaping Handler) {
            self.name = name
            self.scope = scope
            self.handler = handler
        }
    }

    let pattern: Pattern
    let label: String
    /// A tus route: `X-HTTP-Method-Override` applies, and every answer has `Tus-Resumable`.
    let isTus: Bool
    /// The path parameter is a blob's key, which the access log records.
    let parameterIsKey: Bool
    /// In the order the Allow header names them.
    let methods: [Method]

    init(_ pattern: Pattern, _ label: String, isTus: Bool = false, parameterIsKey: Bool = false, _ methods: [Method]) {
        self.pattern = pattern
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
        case .exact(let exact):
            return path.elementsEqual(exact.utf8) ? path[path.endIndex...] : nil
        case .parameter(let prefix, let minimum):
            guard path.starts(with: prefix.utf8) else { return nil }
            let rest = path[prefix.utf8.count...]
            return rest.count >= minimum ? rest : nil
        }
    }
}

extension BlobService {
    /// Every route of the /v1 listener, one row each.
    static let routes: [V1Route] = [
        V1Route(.exact("/v1/blobs"), "/v1/blobs", [
            .init("GET", .read) { service, head, _ in .respond(try service.list(head)) },
            .init("HEAD", .read) { service, head, _ in .respond(try service.list(head)) },
            .init("POST", .write) { service, head, _ in try service.receiveUpload(head, key: nil) },
        ]),
        V1Route(.parameter(prefix: "/v1/blobs/", minimum: 0), "/v1/blobs/{key}", parameterIsKey: true, [
            .init("GET", .read) { service, head, raw in try service.readOrList(head, raw) },
            .init("HEAD", .read) { service, head, raw in try service.readOrList(head, raw) },
            .init("PUT", .write) { service, head, raw in try service.receiveUpload(head, key: BlobService.key(raw)) },
            .init("DELETE", .delete) { service, head, raw in .respond(try service.delete(head, key: BlobService.key(raw))) },
        ]),
        V1Route(.exact("/v1/uploads"), "/v1/uploads", isTus: true, [
            .init("POST", .write) { service, head, _ in try service.createUpload(head) },
            .init("OPTIONS", nil) { service, _, _ in .respond(service.tusOptions()) },
        ]),
        V1Route(.parameter(prefix: "/v1/uploads/", minimum: 1), "/v1/uploads/{id}", isTus: true, [
            .init("HEAD", .write) { service, head, raw in try service.uploadOffset(head, id: BlobService.uploadID(raw)) },
            .init("PATCH", .write) { service, head, raw in try service.patchUpload(head, id: BlobService.uploadID(raw)) },
            .init("DELETE", .write) { service, head, raw in try service.terminateUpload(head, id: BlobService.uploadID(raw)) },
            .init("OPTIONS", nil) { service, _, _ in .respond(service.tusOptions()) },
        ]),
        V1Route(.exact("/healthz"), "/healthz", operational { _ in BlobService.textResponse("ok\n") }),
        V1Route(.exact("/readyz"), "/readyz", operational { service in try service.ready() }),
        V1Route(.exact("/metrics"), "/metrics", operational { service in
            BlobService.textResponse(service.metrics.render(blobs: try? service.store.totals()),
                         contentType: "text/plain; version=0.0.4; charset=utf-8")
        }),
    ]

    /// GET and HEAD of an operational endpoint: no scope.
    private static func operational(_ answer: @escaping @Sendable (BlobService) throws -> HTTPResponse) -> [V1Route.Method] {
        ["GET", "HEAD"].map { name in .init(name, nil) { service, _, _ in .respond(try answer(service)) } }
    }

    /// The route of a raw path, and its raw parameter.
    static func route(_ path: [UInt8]) throws(HTTPError) -> (route: V1Route, parameter: ArraySlice<UInt8>) {
        for route in routes {
            if let parameter = route.match(path) { return (route, parameter) }
        }
        throw .noRoute
    }

    /// An upload's id from the path.
    static func uploadID(_ raw: ArraySlice<UInt8>) -> String {
        String(decoding: raw, as: UTF8.self)
    }

    /// GET or HEAD under /v1/blobs/: a folder's listing (a path ending in `/`), else the blob.
    func readOrList(_ head: HTTPRequestHead, _ raw: ArraySlice<UInt8>) throws -> HTTPRequestAction {
        if let folder = try Self.folder(raw) { return .respond(try list(head, folder: folder)) }
        return read(head, key: try Self.key(raw))
    }
}

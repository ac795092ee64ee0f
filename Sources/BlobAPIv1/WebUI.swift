import BlobCore
import HTTPCore
import MicroHTTPD

/// The web page at `/ui/` (`--no-ui` turns it off): HTML, CSS and JavaScript embedded in the
/// binary (`UIAssets/`, made from `ui/` by `tools/embed-ui.py`), nothing read
/// from disk or fetched from elsewhere. The page needs no credential to load; every API call it
/// makes carries the token the user logs in with.
public struct WebUI: Sendable {
    /// The release, shown in the page's status line.
    public let version: String
    /// This node's id in a cluster; nil on a single node.
    public let node: String?

    public init(version: String, node: String?) {
        self.version = version
        self.node = node
    }

    /// One embedded file: its name under `/ui/`, type, strong entity tag and bytes.
    struct Asset: Sendable {
        let name: String
        let contentType: String
        let etag: String
        let body: [UInt8]
    }

    /// The embedded files by name (`index.html` answers `/ui/`).
    static let assets: [String: Asset] = Dictionary(uniqueKeysWithValues: UIAssets.all.map { ($0.name, $0) })

    /// Every answer of the page: scripts and styles only from the page's own files (no inline
    /// code, nothing from elsewhere), no type sniffing, no framing by other sites.
    static let securityHeaders: [(name: String, value: String)] = [
        ("Content-Security-Policy", "default-src 'self'"),
        ("X-Content-Type-Options", "nosniff"),
        ("X-Frame-Options", "DENY"),
        ("Referrer-Policy", "no-referrer"),
    ]

    /// GET or HEAD of `/ui/NAME`: the asset, or 304 when `If-None-Match` names its tag.
    /// `about.json` is the status line's version and node.
    func answer(_ head: HTTPRequestHead, name: String) throws(HTTPError) -> HTTPResponse {
        if name == "about.json" {
            let about = JSON.object([("version", .string(version)), ("node", node.map { .string($0) } ?? .null)])
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")]
                                + Self.securityHeaders, body: .bytes(about.utf8()))
        }
        guard let asset = Self.assets[name.isEmpty ? "index.html" : name] else { throw .noRoute }
        // Revalidated on every load (cheap with the tag), so a new binary's page is never mixed with an old one's.
        let headers = [("ETag", asset.etag), ("Cache-Control", "no-cache")] + Self.securityHeaders
        if Self.matches(head.values(of: "If-None-Match"), asset.etag) {
            return HTTPResponse(status: 304, headers: headers)
        }
        return HTTPResponse(status: 200, headers: [("Content-Type", asset.contentType)] + headers, body: .bytes(asset.body))
    }

    /// Whether any `If-None-Match` field names `etag` (weak comparison) or is `*`.
    static func matches(_ fields: [String], _ etag: String) -> Bool {
        for field in fields {
            for member in field.split(separator: ",") {
                let tag = member.trimmingOWS()
                if tag == "*" || tag == etag || tag == "W/" + etag { return true }
            }
        }
        return false
    }
}

extension BlobService {
    /// GET or HEAD under `/ui/`: 404 with `--no-ui`, else the named asset (`/ui/` is the page).
    func webPage(_ head: HTTPRequestHead, _ raw: ArraySlice<UInt8>) throws -> HTTPResponse {
        guard let webUI else { throw HTTPError.noRoute }
        return try webUI.answer(head, name: String(decoding: raw, as: UTF8.self))
    }

    /// `/ui` without its slash: a redirect to the page (404 with `--no-ui`).
    func webPageRedirect() throws -> HTTPResponse {
        guard webUI != nil else { throw HTTPError.noRoute }
        return HTTPResponse(status: 308, headers: [("Location", publicURL + "/ui/"), Self.noStore])
    }
}

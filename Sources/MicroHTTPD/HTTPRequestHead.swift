/// The head of an HTTP request as libmicrohttpd parsed it: nothing decoded, nothing interpreted.
public struct HTTPRequestHead: Sendable {
    /// The request method, exactly as sent (`GET`, `PUT`, ...).
    public let method: String
    /// The request target's path as raw bytes, still percent-encoded, without the query.
    public let path: [UInt8]
    /// The HTTP version (`HTTP/1.1`).
    public let version: String
    /// Header fields in the order received; names as sent.
    public let headers: [(name: String, value: String)]
    /// The raw query (after `?`), still percent-encoded; nil when the target has no `?`.
    public let query: [UInt8]?
    /// The client's address, when known.
    public let peer: SocketAddress?
    /// False when libmicrohttpd took a head that RFC 9112 refuses: a line ending in a bare LF,
    /// a NUL, a folded field line (obs-fold) or more than one space in the request line.
    public let isStrictlyFramed: Bool
    /// What the handler notes about the request for its completion (who made it); shared by
    /// every copy of the head and by a head made from it with `annotation:`.
    public let annotation: HTTPRequestAnnotation
    /// The client's address, `host:port` (`-` when unknown).
    public var remoteAddress: String { peer?.description ?? "-" }

    /// Creates a head from a raw request target (`/path?query`).
    public init(method: String, target: [UInt8], version: String = "HTTP/1.1",
                headers: [(name: String, value: String)] = [], peer: SocketAddress? = nil,
                isStrictlyFramed: Bool = true, annotation: HTTPRequestAnnotation = HTTPRequestAnnotation()) {
        if let mark = target.firstIndex(of: UInt8(ascii: "?")) {
            self.init(method: method, path: Array(target[..<mark]), version: version, headers: headers,
                      query: Array(target[(mark + 1)...]), peer: peer, isStrictlyFramed: isStrictlyFramed,
                      annotation: annotation)
        } else {
            self.init(method: method, path: target, version: version, headers: headers, peer: peer,
                      isStrictlyFramed: isStrictlyFramed, annotation: annotation)
        }
    }

    /// Creates a head; used by the server and by tests. A head made from another passes on its
    /// `annotation`.
    public init(
        method: String, path: [UInt8], version: String = "HTTP/1.1",
        headers: [(name: String, value: String)] = [],
        query: [UInt8]? = nil,
        peer: SocketAddress? = nil,
        isStrictlyFramed: Bool = true,
        annotation: HTTPRequestAnnotation = HTTPRequestAnnotation()
    ) {
        self.method = method
        self.path = path
        self.version = version
        self.headers = headers
        self.query = query
        self.peer = peer
        self.isStrictlyFramed = isStrictlyFramed
        self.annotation = annotation
    }

    /// Every value of the header `name` (case-insensitive), in the order received.
    public func values(of name: String) -> [String] {
        headers.filter { $0.name.caseInsensitiveEquals(name) }.map(\.value)
    }

    /// True when a body follows the head (a non-zero Content-Length, or Transfer-Encoding).
    public var hasBody: Bool {
        if self["Transfer-Encoding"] != nil { return true }
        guard let length = self["Content-Length"] else { return false }
        return length != "0"
    }

    /// The first value of the header `name` (case-insensitive).
    public subscript(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveEquals(name) }?.value
    }
}

extension String {
    /// ASCII case-insensitive comparison, as HTTP field names need.
    public func caseInsensitiveEquals(_ other: String) -> Bool {
        let a = utf8, b = other.utf8
        guard a.count == b.count else { return false }
        return zip(a, b).allSatisfy { x, y in x | 0x20 == y | 0x20 && (x == y || x.isASCIILetter) }
    }
}

extension UInt8 {
    fileprivate var isASCIILetter: Bool { (0x41...0x5A).contains(self) || (0x61...0x7A).contains(self) }
}

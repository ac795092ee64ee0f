#if canImport(Glibc)
import Glibc
#endif
import SystemCalls

/// What went wrong talking to a server over HTTP, before it answered with a status.
public enum HTTPClientError: Error, CustomStringConvertible {
    case badURL(String, reason: String)
    case https(String)
    case resolve(host: String, reason: String)
    case connect(address: String, Errno)
    case connectTimeout(address: String, seconds: Double)
    case send(Errno)
    case receive(Errno)
    case timeout(seconds: Double)
    case closedEarly
    case malformed(String)
    case tooLarge(limit: Int)

    /// A mistake in what the user gave (exit 2 as a usage error), rather than no answer.
    public var isUsage: Bool {
        switch self {
        case .badURL, .https: true
        default: false
        }
    }

    public var description: String {
        switch self {
        case .badURL(let url, let reason): "--url '\(url)': \(reason)"
        case .https(let url):
            "--url '\(url)': https:// is not supported here; give blobd's plain HTTP address (run this on its host "
                + "against http://127.0.0.1:PORT), or the plain http:// side of the TLS proxy in front of it"
        case .resolve(let host, let reason): "cannot resolve '\(host)': \(reason)"
        case .connect(let address, let errno): "cannot connect to \(address): \(errno)"
        case .connectTimeout(let address, let seconds): "cannot connect to \(address): no answer within \(Self.seconds(seconds))"
        case .send(let errno): "sending the request failed: \(errno)"
        case .receive(let errno): "reading the answer failed: \(errno)"
        case .timeout(let seconds): "no complete answer within \(Self.seconds(seconds))"
        case .closedEarly: "the server closed the connection before its answer was complete"
        case .malformed(let what): "the answer is not HTTP/1.1 as expected: \(what)"
        case .tooLarge(let limit): "the answer is larger than \(limit) bytes"
        }
    }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }
}

/// Where requests go: `http://HOST[:PORT][/PREFIX]`. Plain HTTP only: the blobd executable
/// links no TLS and no libcurl.
public struct ServerURL: Sendable, Equatable, CustomStringConvertible {
    public let host: String
    public let port: UInt16
    /// "" or "/prefix", without a trailing slash; requests' paths follow it.
    public let basePath: String

    public init(parsing text: String) throws(HTTPClientError) {
        let lower = text.lowercased()
        if lower.hasPrefix("https://") { throw .https(text) }
        guard lower.hasPrefix("http://") else { throw .badURL(text, reason: "it must start with http://") }
        let rest = text.dropFirst("http://".count)
        guard !rest.contains(where: { $0 == "?" || $0 == "#" }) else { throw .badURL(text, reason: "it may not hold a query or fragment") }
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<slash]
        guard !authority.contains("@") else {
            throw .badURL(text, reason: "it may not hold credentials; the token goes in BLOBD_TOKEN")
        }
        var path = String(rest[slash...])
        while path.hasSuffix("/") { path.removeLast() }
        guard path.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .badURL(text, reason: "its path must be printable ASCII without spaces (percent-encode the rest)")
        }
        (host, port) = try Self.hostAndPort(authority, in: text)
        basePath = path
    }

    private static func hostAndPort(_ authority: Substring, in text: String) throws(HTTPClientError) -> (String, UInt16) {
        var host = authority, portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw .badURL(text, reason: "an IPv6 address needs its closing ]") }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            guard after.isEmpty || after.hasPrefix(":") else { throw .badURL(text, reason: "only :PORT may follow the host") }
            portText = after.isEmpty ? nil : after.dropFirst()
        } else if let colon = authority.firstIndex(of: ":") {
            guard authority.lastIndex(of: ":") == colon else { throw .badURL(text, reason: "an IPv6 address goes in brackets: http://[::1]:8080") }
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        }
        guard !host.isEmpty, host.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F && $0 != "/" && $0 != "[" && $0 != "]" }) else {
            throw .badURL(text, reason: "it needs a host name or address (IPv6 in brackets)")
        }
        guard let portText else { return (String(host), 80) }
        guard !portText.isEmpty, portText.allSatisfy(\.isASCII), let port = UInt16(portText), port > 0 else {
            throw .badURL(text, reason: "the port must be a number from 1 to 65535")
        }
        return (String(host), port)
    }

    /// The Host header's value.
    var authority: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == 80 ? name : "\(name):\(port)"
    }

    public var description: String { "http://\(authority)\(basePath)" }
}

/// One answer: its status, header fields (names lowercased) and body.
public struct HTTPClientResponse: Sendable {
    public let status: Int
    public let headers: [(name: String, value: String)]
    public let body: [UInt8]

    public func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }
}

/// A small HTTP/1.1 client over one TCP connection per request (`Connection: close`), for
/// `blobd key` and the blocking hooks: one deadline for connecting, sending and the whole
/// answer. `HTTPConnection` keeps its connection for the next request.
public struct HTTPClient: Sendable {
    public let url: ServerURL
    /// Seconds for the whole exchange, from connecting to the answer's last byte.
    public let timeout: Double
    /// The largest body read.
    public var limit = 64 << 20

    public init(url: ServerURL, timeout: Double, limit: Int = 64 << 20) {
        self.url = url
        self.timeout = timeout
        self.limit = limit
    }

    public func send(_ method: String, _ path: String, headers: [(String, String)], body: [UInt8]?) throws(HTTPClientError) -> HTTPClientResponse {
        let request = Self.request(method, url: url, path, headers: headers + [("Connection", "close")], body: body)
        let deadline = Self.deadline(after: timeout)
        let socket = try Self.connect(url, deadline: deadline, timeout: timeout)
        return try socket.closeAfter { socket throws(HTTPClientError) in
            try Self.sendAll(request, on: socket, deadline: deadline, timeout: timeout)
            var reader = ResponseReader(socket: socket, deadline: deadline, timeout: timeout)
            return try reader.response(isHead: method == "HEAD", limit: limit)
        }
    }

    /// The bytes of a request: its head (Host first, then `headers`, then Content-Length when
    /// there is a body) and its body.
    static func request(_ method: String, url: ServerURL, _ path: String, headers: [(String, String)], body: [UInt8]?) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(512 + (body?.count ?? 0))
        appendRequest(method, basePath: url.basePath, authority: url.authority, path, headers: headers, body: body, to: &bytes)
        return bytes
    }

    /// Appends the bytes of `request(...)` to `bytes`, without an intermediate copy of the body
    /// (`authority` is the URL's, made once for many requests).
    static func appendRequest(_ method: String, basePath: String, authority: String, _ path: String, headers: [(String, String)],
                              body: [UInt8]?, to bytes: inout [UInt8]) {
        func field(_ name: String, _ value: String) {
            bytes += name.utf8
            bytes += ": ".utf8
            bytes += value.utf8
            bytes += "\r\n".utf8
        }
        bytes += method.utf8
        bytes.append(0x20)
        bytes += basePath.utf8
        bytes += path.utf8
        bytes += " HTTP/1.1\r\n".utf8
        field("Host", authority)
        for (name, value) in headers { field(name, value) }
        if let body { field("Content-Length", String(body.count)) }
        bytes += "\r\n".utf8
        if let body { bytes += body }
    }

    static func deadline(after seconds: Double) -> ContinuousClock.Instant {
        ContinuousClock.now + .milliseconds(Int64((seconds * 1000).rounded(.up)))
    }

    /// The first address of `url.host` that accepts a connection before the deadline.
    static func connect(_ url: ServerURL, deadline: ContinuousClock.Instant, timeout: Double) throws(HTTPClientError) -> FileDescriptor {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(url.host, String(url.port), &hints, &list)
        guard status == 0, let list else { throw .resolve(host: url.host, reason: String(cString: gai_strerror(status))) }
        defer { freeaddrinfo(list) }
        var failure = HTTPClientError.resolve(host: url.host, reason: "no address")
        for entry in sequence(first: list, next: { $0.pointee.ai_next }) {
            guard let address = entry.pointee.ai_addr else { continue }
            do {
                return try connect(family: entry.pointee.ai_family, address, entry.pointee.ai_addrlen, name: url.authority,
                                   deadline: deadline, timeout: timeout)
            } catch {
                failure = error
            }
        }
        throw failure
    }

    private static func connect(family: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t, name: String,
                                deadline: ContinuousClock.Instant, timeout: Double) throws(HTTPClientError) -> FileDescriptor {
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue)
        let raw = socket(family, type, 0)
        guard raw >= 0 else { throw .connect(address: name, Errno(errno)) }
        let socket = FileDescriptor(rawValue: raw)
        do {
            if SystemCall.run("connect", { Glibc.connect(raw, address, length) }) == -1 {
                let code = errno
                guard code == EINPROGRESS || code == EALREADY else { throw HTTPClientError.connect(address: name, Errno(code)) }
                guard try wait(socket, for: Int16(POLLOUT), until: deadline) else {
                    throw HTTPClientError.connectTimeout(address: name, seconds: timeout)
                }
                var result: Int32 = 0
                var size = socklen_t(MemoryLayout<Int32>.size)
                try SystemCall.checked("getsockopt") { getsockopt(raw, SOL_SOCKET, SO_ERROR, &result, &size) }
                if result != 0 { throw HTTPClientError.connect(address: name, Errno(result)) }
            }
            return socket
        } catch let error as HTTPClientError {
            socket.close()
            throw error
        } catch {
            socket.close()
            throw .connect(address: name, error as? Errno ?? Errno(EIO))
        }
    }

    /// poll(2) until `events` or the deadline; false at the deadline.
    static func wait(_ socket: FileDescriptor, for events: Int16, until deadline: ContinuousClock.Instant) throws(Errno) -> Bool {
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return false }
            let (seconds, attoseconds) = left.components
            let milliseconds = Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
            var entry = pollfd(fd: socket.rawValue, events: events, revents: 0)
            let ready = try SystemCall.checked("poll") { poll(&entry, 1, milliseconds) }
            if ready > 0 { return true }
        }
    }

    static func sendAll(_ bytes: [UInt8], on socket: FileDescriptor, deadline: ContinuousClock.Instant, timeout: Double) throws(HTTPClientError) {
        var done = 0
        while done < bytes.count {
            let sent = bytes.withUnsafeBytes { buffer in
                SystemCall.run("send") { Glibc.send(socket.rawValue, buffer.baseAddress.map { $0 + done }, bytes.count - done, Int32(MSG_NOSIGNAL)) }
            }
            if sent >= 0 {
                done += sent
                continue
            }
            let code = errno
            guard code == EAGAIN || code == EWOULDBLOCK else { throw .send(Errno(code)) }
            do {
                guard try wait(socket, for: Int16(POLLOUT), until: deadline) else { throw HTTPClientError.timeout(seconds: timeout) }
            } catch let error as HTTPClientError {
                throw error
            } catch {
                throw .send(error as? Errno ?? Errno(EIO))
            }
        }
    }
}

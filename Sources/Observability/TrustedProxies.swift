import BlobCore
import MicroHTTPD

#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 network, `ADDRESS/BITS` (a bare address is a network of one).
public struct NetworkRange: Sendable, Equatable {
    let bytes: [UInt8]
    let bits: Int

    /// Parses `192.0.2.0/24`, `2001:db8::/32`, `10.0.0.1`; nil if it is not one.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = IPAddress.parse(String(parts[0])) else { return nil }
        let width = address.count * 8
        if parts.count == 2 {
            guard let bits = Int(parts[1]), (0...width).contains(bits), parts[1].allSatisfy(\.isNumber) else { return nil }
            self.bits = bits
        } else {
            self.bits = width
        }
        self.bytes = address
    }

    /// True when `address` (4 or 16 bytes, an IPv4-mapped IPv6 address counting as IPv4) is inside.
    func contains(_ address: [UInt8]) -> Bool {
        let address = IPAddress.unmapped(address)
        guard address.count == bytes.count else { return false }
        var left = bits
        for (a, b) in zip(address, bytes) where left > 0 {
            let mask: UInt8 = left >= 8 ? 0xFF : ~(0xFF >> UInt8(left))
            if a & mask != b & mask { return false }
            left -= 8
        }
        return true
    }
}

/// IP address literals as bytes.
enum IPAddress {
    /// 4 bytes for IPv4, 16 for IPv6 (brackets allowed); nil for anything else.
    static func parse(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: v4) { Array($0) }
        }
        let literal = text.hasPrefix("[") && text.hasSuffix("]") ? String(text.dropFirst().dropLast()) : text
        var v6 = in6_addr()
        if inet_pton(AF_INET6, literal, &v6) == 1 {
            return unmapped(withUnsafeBytes(of: v6) { Array($0) })
        }
        return nil
    }

    /// `::ffff:a.b.c.d` as the IPv4 address it maps.
    static func unmapped(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.count == 16, bytes[..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF else { return bytes }
        return Array(bytes[12...])
    }
}

/// The proxies whose word blobd takes for the client's address (`--trusted-proxy`).
///
/// When a request comes from a trusted proxy, the client is the rightmost address of the
/// chain in `Forwarded` (RFC 7239 `for=`; it wins when present) or else `X-Forwarded-For` that
/// is not itself a trusted proxy: every proxy appends the address it saw, so the entries to
/// the left of the first untrusted one are whatever the client chose to send. A request from
/// any other peer is logged with the peer's own address, whatever its headers say.
public struct TrustedProxies: Sendable {
    let ranges: [NetworkRange]

    /// Trusts `ranges`; none trusts no one.
    public init(_ ranges: [NetworkRange] = []) {
        self.ranges = ranges
    }

    func trusts(_ address: [UInt8]) -> Bool {
        ranges.contains { $0.contains(address) }
    }

    /// The client's address for the log: `host:port` of the peer, or the address a trusted
    /// proxy forwarded (without a port).
    public func clientAddress(of head: HTTPRequestHead) -> String {
        guard let peer = head.peer else { return "-" }
        return forwardedClient(of: head) ?? peer.description
    }

    /// The client's address without a port: the peer's, or the one a trusted proxy forwarded.
    public func clientHost(of head: HTTPRequestHead) -> String {
        guard let peer = head.peer else { return "-" }
        return forwardedClient(of: head) ?? peer.host
    }

    /// The address a trusted peer forwarded; nil when the peer is not trusted or names none.
    private func forwardedClient(of head: HTTPRequestHead) -> String? {
        guard let peer = head.peer, !ranges.isEmpty, trusts(peer.bytes) else { return nil }
        var client: String?
        for entry in Self.forwardedChain(head).reversed() {
            guard let address = IPAddress.parse(entry) else { break }  // `unknown`, `_hidden`, garbage
            client = Self.text(address)
            if !trusts(address) { break }
        }
        return client
    }

    /// The `for=` addresses of `Forwarded`, or else the entries of `X-Forwarded-For`, left to right.
    static func forwardedChain(_ head: HTTPRequestHead) -> [String] {
        let forwarded = head.values(of: "Forwarded")
        if !forwarded.isEmpty {
            return forwarded.joined(separator: ",").split(separator: ",").map { element in
                let pairs = element.split(separator: ";").map { $0.trimmingOWS() }
                let value = pairs.first { $0.lowercased().hasPrefix("for=") }.map { String($0.dropFirst(4)) } ?? ""
                return hostOfNode(value)
            }
        }
        return head.values(of: "X-Forwarded-For").joined(separator: ",").split(separator: ",").map { String($0.trimmingOWS()) }
    }

    /// RFC 7239 §6 node: `192.0.2.1`, `"192.0.2.1:80"`, `"[2001:db8::1]:4711"` → the address part.
    static func hostOfNode(_ value: String) -> String {
        var node = Substring(value)
        if node.hasPrefix("\""), node.hasSuffix("\""), node.count >= 2 { node = node.dropFirst().dropLast() }
        if node.hasPrefix("["), let close = node.firstIndex(of: "]") {
            return String(node[node.index(after: node.startIndex)..<close])
        }
        if let colon = node.firstIndex(of: ":"), node.lastIndex(of: ":") == colon {
            return String(node[..<colon])  // IPv4 with a port
        }
        return String(node)
    }

    static func text(_ address: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let family = address.count == 4 ? AF_INET : AF_INET6
        _ = address.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count)) }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

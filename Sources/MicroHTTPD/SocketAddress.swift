#if canImport(Glibc)
import Glibc
#endif

/// A client's IPv4 or IPv6 address and port, copied from libmicrohttpd and formatted only when
/// something (the access log) asks for it.
public struct SocketAddress: Sendable, CustomStringConvertible {
    private let family: Int32
    private let port: UInt16
    /// The address bytes as stored in `in_addr` / `in6_addr` (IPv4 uses the first four).
    private let address: (UInt64, UInt64)

    init?(_ address: UnsafePointer<sockaddr>) {
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            let v4 = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in.self)
            family = AF_INET
            port = UInt16(bigEndian: v4.sin_port)
            self.address = (UInt64(v4.sin_addr.s_addr), 0)
        case AF_INET6:
            let v6 = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in6.self)
            family = AF_INET6
            port = UInt16(bigEndian: v6.sin6_port)
            self.address = withUnsafeBytes(of: v6.sin6_addr) { ($0.loadUnaligned(as: UInt64.self), $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self)) }
        default:
            return nil
        }
    }

    /// `host:port`, with the host in brackets for IPv6.
    public var description: String {
        family == AF_INET6 ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// The address alone, as text (`192.0.2.1`, `2001:db8::1`).
    public var host: String {
        // On the stack, and read once: every logged or reported request asks for it.
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(INET6_ADDRSTRLEN) + 1) { text in
            text.initialize(repeating: 0)
            var bytes = address
            _ = withUnsafeBytes(of: &bytes) { inet_ntop(family, $0.baseAddress, text.baseAddress, socklen_t(text.count)) }
            return String(decoding: UnsafeRawBufferPointer(text).prefix { $0 != 0 }, as: UTF8.self)
        }
    }

    /// The address in network byte order: 4 bytes for IPv4, 16 for IPv6.
    public var bytes: [UInt8] {
        withUnsafeBytes(of: address) { Array($0.prefix(family == AF_INET6 ? 16 : 4)) }
    }
}

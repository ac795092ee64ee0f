import Foundation
import Testing
@testable import MicroHTTPD

/// A client's address as the access log and event messages show it.
@Suite struct SocketAddressTests {
    @Test func ipv4AndIPv6AsText() throws {
        var v4 = sockaddr_in()
        v4.sin_family = sa_family_t(AF_INET)
        v4.sin_port = UInt16(8080).bigEndian
        _ = inet_pton(AF_INET, "192.0.2.1", &v4.sin_addr)
        let four = try #require(withUnsafePointer(to: &v4) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SocketAddress($0) } })
        #expect(four.host == "192.0.2.1" && four.description == "192.0.2.1:8080")
        var v6 = sockaddr_in6()
        v6.sin6_family = sa_family_t(AF_INET6)
        v6.sin6_port = UInt16(443).bigEndian
        _ = inet_pton(AF_INET6, "2001:db8:ffff:ffff:ffff:ffff:255.255.255.255", &v6.sin6_addr)
        let six = try #require(withUnsafePointer(to: &v6) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SocketAddress($0) } })
        #expect(six.host == "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff" && six.description == "[2001:db8:ffff:ffff:ffff:ffff:ffff:ffff]:443")
    }
}

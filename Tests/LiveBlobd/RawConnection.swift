import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Deterministic pseudo-random bytes.
public func testBytes(_ count: Int, seed: UInt64 = 1) -> [UInt8] {
    var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
    var out = [UInt8](repeating: 0, count: count)
    for i in 0..<count {
        state ^= state << 13; state ^= state >> 7; state ^= state << 17
        out[i] = UInt8(truncatingIfNeeded: state)
    }
    return out
}

/// Sends raw bytes over one TCP connection to 127.0.0.1:`port` and returns everything the
/// server sends back until it closes the connection or `timeout` seconds pass.
public func rawExchange(port: Int, _ request: [UInt8], timeout: Double = 5) throws -> String {
    let connection = try RawConnection(port: port)
    connection.send(request)
    return connection.receiveAll(timeout: timeout)
}

/// A raw client connection to 127.0.0.1, closed (hung up) on `hangUp()` or deinit.
public final class RawConnection {
    private var fd: Int32

    public init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { close(fd); throw TestFailure("connect failed") }
    }

    public func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Everything the server sends until it closes the connection or `timeout` seconds pass.
    public func receiveAll(timeout: Double) -> String {
        String(decoding: receiveBytes(timeout: timeout), as: UTF8.self)
    }

    /// The bytes the server sends until it closes the connection or `timeout` seconds pass.
    public func receiveBytes(timeout: Double) -> [UInt8] {
        var tv = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { received += buffer[..<n] } else if n == 0 { break } else if errno != EAGAIN && errno != EWOULDBLOCK { break }
        }
        return received
    }

    public func hangUp() {
        if fd >= 0 { close(fd); fd = -1 }
    }

    deinit { hangUp() }
}

/// Polls `condition` until it holds or `seconds` pass; returns whether it held.
@discardableResult
public func eventually(within seconds: Double = 10, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        if Date() > deadline { return false }
        usleep(5_000)
    }
    return true
}

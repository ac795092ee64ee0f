import Foundation

/// One HTTP response as curl saw it (the final one, after any 100 Continue).
struct CurlResponse {
    let status: Int
    let headers: [(name: String, value: String)]
    let body: [UInt8]

    /// The first value of a header (case-insensitive).
    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    var text: String { String(decoding: body, as: UTF8.self) }

    /// The body parsed as a JSON object.
    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
    }
}

/// Runs curl with `arguments` (URL included) and returns the final response.
func curl(_ arguments: [String], stdin: [UInt8]? = nil) throws -> CurlResponse {
    let dir = TempDir("curl")
    let headerFile = dir.path + "/headers", bodyFile = dir.path + "/body"
    let result = try run("/usr/bin/curl", ["-sS", "--path-as-is", "-D", headerFile, "-o", bodyFile] + arguments, stdin: stdin)
    guard result.status == 0 else { throw TestFailure("curl \(arguments) failed (\(result.status)): \(result.stderr)") }
    let raw = (try? String(contentsOfFile: headerFile, encoding: .utf8)) ?? ""
    // The header file holds every response (100 Continue first); keep the last block.
    let blocks = raw.components(separatedBy: "\r\n\r\n").filter { !$0.isEmpty }
    guard let last = blocks.last else { throw TestFailure("no response from curl \(arguments)") }
    var lines = last.components(separatedBy: "\r\n")
    let statusLine = lines.removeFirst().split(separator: " ")
    let status = statusLine.count > 1 ? Int(statusLine[1]) ?? 0 : 0
    let headers = lines.compactMap { line -> (String, String)? in
        guard let colon = line.firstIndex(of: ":") else { return nil }
        return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
    }
    let body = [UInt8]((try? Data(contentsOf: URL(fileURLWithPath: bodyFile))) ?? Data())
    return CurlResponse(status: status, headers: headers, body: body)
}

/// Deterministic pseudo-random bytes.
func testBytes(_ count: Int, seed: UInt64 = 1) -> [UInt8] {
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
func rawExchange(port: Int, _ request: [UInt8], timeout: Double = 5) throws -> String {
    let connection = try RawConnection(port: port)
    connection.send(request)
    return connection.receiveAll(timeout: timeout)
}

/// A raw client connection to 127.0.0.1, closed (hung up) on `hangUp()` or deinit.
final class RawConnection {
    private var fd: Int32

    init(port: Int) throws {
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

    func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Everything the server sends until it closes the connection or `timeout` seconds pass.
    func receiveAll(timeout: Double) -> String {
        var tv = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { received += buffer[..<n] } else if n == 0 { break } else if errno != EAGAIN && errno != EWOULDBLOCK { break }
        }
        return String(decoding: received, as: UTF8.self)
    }

    func hangUp() {
        if fd >= 0 { close(fd); fd = -1 }
    }

    deinit { hangUp() }
}

/// Polls `condition` until it holds or `seconds` pass; returns whether it held.
@discardableResult
func eventually(within seconds: Double = 10, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        if Date() > deadline { return false }
        usleep(5_000)
    }
    return true
}

import Foundation
import LiveBlobd

/// Sends a request to a live blobd as raw HTTP/1.1 bytes over a new connection, with
/// `Connection: close`, and parses what comes back until the server closes it.
struct LiveTransport: Sendable {
    let port: Int
    static let timeout = 30.0

    func send(_ request: TestRequest) throws -> TestResponse {
        var head = "\(request.method) \(request.target) HTTP/1.1\r\n"
        for (name, value) in request.headers { head += "\(name): \(value)\r\n" }
        head += "Connection: close\r\n\r\n"
        let connection = try RawConnection(port: port)
        connection.send(Array(head.utf8) + request.body)
        return try Self.parse(connection.receiveBytes(timeout: Self.timeout), method: request.method)
    }

    static func parse(_ bytes: [UInt8], method: String) throws -> TestResponse {
        guard let end = find([13, 10, 13, 10], in: bytes, from: 0) else {
            throw TransportError("no complete response head in \(bytes.count) bytes")
        }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusLine = lines[0].split(separator: " ")
        guard statusLine.count > 1, let status = Int(statusLine[1]) else { throw TransportError("bad status line \(lines[0])") }
        let headers = lines.dropFirst().compactMap { line -> (name: String, value: String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var body = Array(bytes[(end + 4)...])
        let chunked = headers.contains { $0.name.lowercased() == "transfer-encoding" && $0.value.lowercased() == "chunked" }
        if chunked { body = try dechunk(body) }
        if let length = headers.first(where: { $0.name.lowercased() == "content-length" }).flatMap({ Int($0.value) }),
           method != "HEAD", body.count != length {
            throw TransportError("body of \(body.count) bytes, Content-Length \(length)")
        }
        return TestResponse(status: status, headers: headers, body: body)
    }

    private static func dechunk(_ bytes: [UInt8]) throws -> [UInt8] {
        var out: [UInt8] = [], index = 0
        while let lineEnd = find([13, 10], in: bytes, from: index) {
            let sizeText = String(decoding: bytes[index..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else { throw TransportError("bad chunk") }
            if size == 0 { return out }
            guard lineEnd + 2 + size <= bytes.count else { throw TransportError("short chunk") }
            out += bytes[(lineEnd + 2)..<(lineEnd + 2 + size)]
            index = lineEnd + 2 + size + 2
        }
        throw TransportError("chunked body without its last chunk")
    }

    private static func find(_ needle: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        var i = start
        while i + needle.count <= bytes.count {
            if bytes[i] == needle[0], bytes[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }
}

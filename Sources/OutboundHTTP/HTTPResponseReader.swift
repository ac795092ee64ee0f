#if canImport(Glibc)
import Glibc
#endif
import SystemCalls

/// Reads one HTTP/1.1 response from a non-blocking socket before a deadline: the status line,
/// header fields, and a body framed by chunked coding, Content-Length or the end of the
/// connection (RFC 9112 section 6.3). Interim 1xx answers are skipped.
struct ResponseReader {
    let socket: FileDescriptor
    /// When the answer being read must be complete (pipelined answers each get their own).
    var deadline: ContinuousClock.Instant
    let timeout: Double
    private var buffer: [UInt8] = []
    private var start = 0
    private var atEnd = false
    /// Whether the last answer lets the connection carry another request: HTTP/1.1 without
    /// `Connection: close`, framed by its length or chunks.
    private(set) var lastLeavesOpen = false
    private var isHTTP11 = false

    /// The most header lines, and the longest line, of a head.
    static let maxHeaderLines = 200, maxLine = 16 * 1024
    /// Answers still to come, the one being read included (`HTTPConnection.pipeline` counts
    /// them down): while it waits the reader asks the kernel to wake it only once they can all
    /// be there (`SO_RCVLOWAT`), not at each answer's first bytes.
    var answersLeft = 1
    /// The socket's low-water mark as this reader set it (0: not set yet; another reader on the
    /// kept connection may have left another).
    private var lowWater: Int32 = 0
    /// The fewest bytes an answer can have: `HTTP/1.1 200\r\n\r\n`.
    static let shortestAnswer = 16
    /// Bytes dropped from the front of `buffer` so far, and the length of the shortest answer
    /// read yet: answers to like requests are alike.
    private var dropped = 0, shortestSeen: Int?

    /// Bytes read past the last answer (the next pipelined answer's, or ones nothing asked for).
    var hasUnreadBytes: Bool { start < buffer.count }

    init(socket: FileDescriptor, deadline: ContinuousClock.Instant, timeout: Double) {
        self.socket = socket
        self.deadline = deadline
        self.timeout = timeout
    }

    mutating func response(isHead: Bool, limit: Int) throws(HTTPClientError) -> HTTPClientResponse {
        let begin = dropped + start
        defer { shortestSeen = min(shortestSeen ?? .max, dropped + start - begin) }
        while true {
            let (status, headers) = try head()
            if (100...199).contains(status) { continue }
            let body = try self.body(status: status, headers: headers, isHead: isHead, limit: limit)
            let closes = headers.contains { $0.name == "connection" && $0.value.lowercased().split(separator: ",")
                .contains { $0.trimmingWhitespace() == "close" } }
            lastLeavesOpen = isHTTP11 && !closes && !atEnd
            return HTTPClientResponse(status: status, headers: headers, body: body)
        }
    }

    private mutating func head() throws(HTTPClientError) -> (Int, [(name: String, value: String)]) {
        let statusLine = try line(limit: Self.maxLine)
        // HTTP/1.x SP 3DIGIT [SP reason]
        guard statusLine.count >= 12, statusLine.prefix(7).elementsEqual("HTTP/1.".utf8), statusLine[statusLine.startIndex + 8] == 0x20,
              let status = Self.statusCode(statusLine.dropFirst(9).prefix(3)) else {
            throw .malformed("the status line is '\(Self.printable(statusLine.prefix(80)))'")
        }
        isHTTP11 = statusLine[statusLine.startIndex + 7] == 0x31
        var headers: [(name: String, value: String)] = []
        for _ in 0...Self.maxHeaderLines {
            let field = try line(limit: Self.maxLine)
            if field.isEmpty { return (status, headers) }
            guard let colon = field.firstIndex(of: 0x3A), colon > field.startIndex,
                  !field[..<colon].contains(where: { $0 <= 0x20 || $0 >= 0x7F }) else {
                throw .malformed("a header line is '\(Self.printable(field.prefix(80)))'")
            }
            // The name is visible ASCII (checked above): lowercased byte by byte.
            let name = String(decoding: field[..<colon].map { (0x41...0x5A).contains($0) ? $0 + 0x20 : $0 }, as: UTF8.self)
            var first = colon + 1, end = field.endIndex
            while first < end, field[first] == 0x20 || field[first] == 0x09 { first += 1 }
            while end > first, field[end - 1] == 0x20 || field[end - 1] == 0x09 { end -= 1 }
            headers.append((name, String(decoding: field[first..<end], as: UTF8.self)))
        }
        throw .malformed("more than \(Self.maxHeaderLines) header lines")
    }

    /// Three ASCII digits as a status code (100 to 999), or nil.
    private static func statusCode(_ digits: ArraySlice<UInt8>) -> Int? {
        guard digits.count == 3, digits.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        let code = digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
        return code >= 100 ? code : nil
    }

    private mutating func body(status: Int, headers: [(name: String, value: String)], isHead: Bool,
                               limit: Int) throws(HTTPClientError) -> [UInt8] {
        if isHead || status == 204 || status == 304 { return [] }
        let codings = headers.filter { $0.name == "transfer-encoding" }.flatMap { $0.value.split(separator: ",") }
            .map { $0.trimmingWhitespace().lowercased() }
        if let last = codings.last {
            return last == "chunked" ? try chunked(limit: limit) : try untilClose(limit: limit)
        }
        let lengths = Set(headers.filter { $0.name == "content-length" }.flatMap { $0.value.split(separator: ",") }
            .map { $0.trimmingWhitespace() })
        guard let first = lengths.first else { return try untilClose(limit: limit) }
        guard lengths.count == 1, !first.isEmpty, first.count <= 18, first.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
              let length = Int(first) else {
            throw .malformed("Content-Length is '\(Self.printable(Array(lengths.joined(separator: ",").utf8.prefix(80))))'")
        }
        guard length <= limit else { throw .tooLarge(limit: limit) }
        return try bytes(length)
    }

    private mutating func chunked(limit: Int) throws(HTTPClientError) -> [UInt8] {
        var body: [UInt8] = []
        while true {
            let sizeLine = try line(limit: Self.maxLine)
            let digits = sizeLine.prefix { $0 != 0x3B }.filter { $0 != 0x20 && $0 != 0x09 }
            guard !digits.isEmpty, digits.count <= 15, digits.allSatisfy(Self.isHexDigit),
                  let size = Int(String(decoding: digits, as: UTF8.self), radix: 16) else {
                throw .malformed("a chunk size line is '\(Self.printable(sizeLine.prefix(80)))'")
            }
            if size == 0 { break }
            guard size <= limit - body.count else { throw .tooLarge(limit: limit) }
            body += try bytes(size)
            guard try bytes(2) == [0x0D, 0x0A] else { throw .malformed("a chunk's data is not followed by CRLF") }
        }
        for _ in 0...Self.maxHeaderLines {
            if try line(limit: Self.maxLine).isEmpty { return body }
        }
        throw .malformed("more than \(Self.maxHeaderLines) trailer lines")
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }

    private mutating func untilClose(limit: Int) throws(HTTPClientError) -> [UInt8] {
        while try fill() {
            guard buffer.count - start <= limit else { throw .tooLarge(limit: limit) }
        }
        defer { start = buffer.count }
        return Array(buffer[start...])
    }

    /// The next line without its LF (or CRLF).
    private mutating func line(limit: Int) throws(HTTPClientError) -> ArraySlice<UInt8> {
        var searched = start
        while true {
            if let newline = buffer[searched...].firstIndex(of: 0x0A) {
                var end = newline
                if end > start && buffer[end - 1] == 0x0D { end -= 1 }
                defer { start = newline + 1 }
                return buffer[start..<end]
            }
            guard buffer.count - start <= limit else { throw .malformed("a line longer than \(limit) bytes") }
            searched = buffer.count
            let offset = start
            guard try fill() else { throw .closedEarly }
            searched -= offset - start  // fill() may have moved the unread bytes to the front
        }
    }

    private mutating func bytes(_ count: Int) throws(HTTPClientError) -> [UInt8] {
        while buffer.count - start < count {
            guard try fill() else { throw .closedEarly }
        }
        defer { start += count }
        return Array(buffer[start..<(start + count)])
    }

    /// Reads more bytes; false at the end of the connection.
    private mutating func fill() throws(HTTPClientError) -> Bool {
        if atEnd { return false }
        if start > 0 {
            buffer.removeFirst(start)
            dropped += start
            start = 0
        }
        while true {
            // On the stack, not zeroed: most answers are a few hundred bytes.
            let count = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16 * 1024) { chunk in
                let count = SystemCall.run("recv") { recv(socket.rawValue, chunk.baseAddress, chunk.count, 0) }
                if count > 0 { buffer.append(contentsOf: chunk[..<count]) }
                return count
            }
            if count > 0 { return true }
            if count == 0 {
                atEnd = true
                return false
            }
            let code = errno
            guard code == EAGAIN || code == EWOULDBLOCK else { throw .receive(Errno(code)) }
            try waitForMore()
        }
    }

    /// Waits until more bytes came. While answers are left after this one, the kernel is asked
    /// to wake the reader only once they can all be there (`SO_RCVLOWAT`): for a few
    /// milliseconds, once they take as many bytes as the shortest answer yet; then once they
    /// take the fewest they can: at least one more for this answer and `shortestAnswer` for each
    /// after it. The end of the connection, an error or the deadline end a wait as before.
    /// Linux's poll(2) honours the mark for TCP; elsewhere, or if the call fails, a wait ends
    /// at the first byte.
    private mutating func waitForMore() throws(HTTPClientError) {
        let after = min(max(answersLeft - 1, 0), 256)
        if after > 0, let shortest = shortestSeen, shortest > Self.shortestAnswer {
            setLowWater(Int32(clamping: min(1 + shortest * after, 256 * 1024)))
            if try waitReadable(until: min(deadline, .now + .milliseconds(5))) { return }
        }
        setLowWater(Int32(clamping: 1 + Self.shortestAnswer * after))
        guard try waitReadable(until: deadline) else { throw .timeout(seconds: timeout) }
    }

    private func waitReadable(until time: ContinuousClock.Instant) throws(HTTPClientError) -> Bool {
        do {
            return try HTTPClient.wait(socket, for: Int16(POLLIN), until: time)
        } catch {
            throw .receive(error)
        }
    }

    /// After the last answer: the kernel's usual mark again (one byte), so that a check of the
    /// kept connection for bytes nothing asked for sees the first one.
    mutating func resetLowWater() {
        if lowWater > 1 { setLowWater(1) }
    }

    private mutating func setLowWater(_ bytes: Int32) {
        var want = bytes
        guard want != lowWater else { return }
        if setsockopt(socket.rawValue, SOL_SOCKET, SO_RCVLOWAT, &want, socklen_t(MemoryLayout<Int32>.size)) == 0 {
            lowWater = want
        }
    }

    static func printable<C: Collection<UInt8>>(_ bytes: C) -> String {
        String(decoding: bytes.map { $0 < 0x20 || $0 >= 0x7F ? 0x3F : $0 }, as: UTF8.self)
    }
}

extension Substring {
    func trimmingWhitespace() -> String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}

import Foundation
import LiveBlobd
import Testing

/// Issue 20 items 5, 7, 10 and 18: slow clients, log forging, framing leniencies, proxies.
@Suite struct HostileClientTests {
    /// Item 5: one header line every 300 ms keeps a connection busy without ever being idle; the
    /// head deadline closes it, and other clients are served meanwhile.
    @Test func slowHeadIsClosedAtTheDeadline() throws {
        let blobd = try BlobdProcess(["--header-timeout", "1"])
        let slow = try Socket(port: blobd.port)
        let started = Date()
        slow.send("GET /healthz HTTP/1.1\r\nHost: x\r\n")
        var closedAfter: Double?
        for line in 0..<20 where closedAfter == nil {
            slow.send("X-Line-\(line): y\r\n")
            if slow.waitForClose(within: 0.3) { closedAfter = Date().timeIntervalSince(started) }
        }
        let elapsed = try #require(closedAfter, "still open after 6 s")
        #expect(elapsed >= 0.9 && elapsed < 2.5, "closed after \(elapsed) s")
        #expect(try curl([blobd.baseURL + "/healthz"]).status == 200)
        #expect(try curl([blobd.baseURL + "/metrics"]).text.contains("blobd_slow_connections_closed_total{reason=\"head\"} 1\n"))
        // A keep-alive connection idle past the deadline is closed too; one that is not, is served.
        let idle = try Socket(port: blobd.port)
        idle.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(idle.receive(within: 1).hasPrefix("HTTP/1.1 200 "))
        idle.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(idle.receive(within: 1).hasPrefix("HTTP/1.1 200 "))
        #expect(idle.waitForClose(within: 2.5))
        #expect(try curl([blobd.baseURL + "/metrics"]).text.contains("blobd_slow_connections_closed_total{reason=\"idle\"} 1\n"))
    }

    /// Item 5: a body that trickles in below --min-body-rate is cut off and stores nothing; one
    /// above it is stored.
    @Test func slowBodyIsClosedAndStoresNothing() throws {
        let blobd = try BlobdProcess(["--header-timeout", "1", "--min-body-rate", "2000"])
        let slow = try Socket(port: blobd.port)
        let started = Date()
        slow.send("PUT /v1/blobs/slow HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")
        var closedAfter: Double?
        for _ in 0..<40 where closedAfter == nil {
            slow.send(String(repeating: "z", count: 200))  // 1,000 bytes/s
            if slow.waitForClose(within: 0.2) { closedAfter = Date().timeIntervalSince(started) }
        }
        let elapsed = try #require(closedAfter, "still open after 8 s")
        #expect(elapsed >= 0.9 && elapsed < 3, "closed after \(elapsed) s")
        #expect(try curl([blobd.baseURL + "/v1/blobs/slow"]).status == 404)
        #expect(try curl([blobd.baseURL + "/metrics"]).text.contains("blobd_slow_connections_closed_total{reason=\"body\"} 1\n"))

        let steady = try Socket(port: blobd.port)
        steady.send("PUT /v1/blobs/steady HTTP/1.1\r\nHost: x\r\nContent-Length: 24000\r\n\r\n")
        for _ in 0..<8 {
            steady.send(String(repeating: "s", count: 3000))  // 12,000 bytes/s for 2 s
            usleep(250_000)
        }
        #expect(steady.receive(within: 2).hasPrefix("HTTP/1.1 201 "))
        #expect(try curl([blobd.baseURL + "/v1/blobs/steady"]).body.count == 24000)
    }

    /// Item 5: connections beyond --max-connections-per-ip from one address are refused at once.
    @Test func connectionsPerAddressAreLimited() throws {
        let blobd = try BlobdProcess(["--max-connections-per-ip", "3"])
        let held = try (0..<3).map { _ in try Socket(port: blobd.port) }
        for socket in held {  // each one answered, so it is accepted before the fourth connects
            socket.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(socket.receive(within: 1).hasPrefix("HTTP/1.1 200 "))
        }
        let refused = try Socket(port: blobd.port)
        refused.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(refused.receive(within: 1) == "", "the fourth connection is closed without an answer")
        for socket in held {
            socket.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(socket.receive(within: 1).hasPrefix("HTTP/1.1 200 "))
        }
        held[0].close()
        #expect(eventually(within: 3) { (try? curl([blobd.baseURL + "/healthz"]).status) == 200 })
    }

    /// Item 10: RFC 9112 framing that libmicrohttpd 0.9.75 tolerates gets 400 and a close, and
    /// nothing is stored.
    @Test func framingLeniencesGet400AndClose() throws {
        let blobd = try BlobdProcess()
        let heads = [
            "bare LF": "PUT /v1/blobs/f HTTP/1.1\nHost: x\nContent-Length: 5\n\nhello",
            "one bare LF": "PUT /v1/blobs/f HTTP/1.1\r\nHost: x\nContent-Length: 5\r\n\r\nhello",
            "folded Content-Length": "PUT /v1/blobs/f HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n 5\r\n\r\nhello",
            "folded field": "PUT /v1/blobs/f HTTP/1.1\r\nHost: x\r\nX-A: a\r\n\tb\r\nContent-Length: 5\r\n\r\nhello",
            "bare CR": "PUT /v1/blobs/f HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\nContent-Length: 5\r\n\r\nhello",
            "NUL": "PUT /v1/blobs/f HTTP/1.1\r\nHost: x\r\nX-A: a\u{0}b\r\nContent-Length: 5\r\n\r\nhello",
            "two spaces": "PUT  /v1/blobs/f HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
            "HTTP/1.0 chunked": "PUT /v1/blobs/f HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        ]
        for (name, request) in heads {
            let response = try rawExchange(port: blobd.port, Array(request.utf8))
            #expect(response.hasPrefix("HTTP/1.1 400 "), "\(name) → \(response)")
            #expect(response.contains("Connection: close\r\n"), "\(name)")
            #expect(response.contains("\"status\":400"), "\(name)")
        }
        // A chunk line that ends in a bare LF: no answer can be queued mid-body, so the
        // connection is closed.
        for body in ["5\nhello\r\n0\r\n\r\n", "5\r\nhello\n3\r\nabc\r\n0\r\n\r\n"] {
            let request = "PUT /v1/blobs/f HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + body
            #expect(try rawExchange(port: blobd.port, Array(request.utf8)) == "", "\(body.debugDescription)")
        }
        #expect(try curl([blobd.baseURL + "/v1/blobs/f"]).status == 404, "nothing stored")
        // The strict forms still work: CRLF, OWS, an empty field, a query, chunks in CRLF.
        let good = "PUT /v1/blobs/f?x=1 HTTP/1.1\r\nHost: x\r\nX-Empty:\r\nX-Tab:\t v \t\r\nTransfer-Encoding: chunked\r\n"
            + "Connection: close\r\n\r\n5\r\nhello\r\n3;ext=1\r\nabc\r\n0\r\n\r\n"
        #expect(try rawExchange(port: blobd.port, Array(good.utf8)).hasPrefix("HTTP/1.1 201 "))
        #expect(try curl([blobd.baseURL + "/v1/blobs/f"]).text == "helloabc")
    }

    /// libmicrohttpd 0.9.75 never shows the end of a chunked body (the CRLF after the last data,
    /// the 0 line, the trailer), so a bare LF there cannot be refused: every chunked request's
    /// connection closes after its answer, and what follows such a body is never read as a
    /// request. A Transfer-Encoding libmicrohttpd would not frame as chunked (spaces around the
    /// value) is a 400, not a body of unknown length.
    @Test func chunkedBodiesCannotSmuggleTheNextRequest() throws {
        let blobd = try BlobdProcess()
        let smuggled = "PUT /v1/blobs/lf HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\n0\nX: y\n\n"
            + "DELETE /v1/blobs/lf HTTP/1.1\r\nHost: x\r\n\r\n"
        let response = try rawExchange(port: blobd.port, Array(smuggled.utf8))
        #expect(response.components(separatedBy: "HTTP/1.1 ").count == 2, "one answer: \(response)")
        #expect(response.contains("Connection: close\r\n"))
        let spaced = "PUT /v1/blobs/sp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked \r\n\r\n5\r\nhello\r\n0\r\n\r\n"
        #expect(try rawExchange(port: blobd.port, Array(spaced.utf8)).hasPrefix("HTTP/1.1 400 "))
        #expect(try curl([blobd.baseURL + "/v1/blobs/sp"]).status == 404, "nothing stored")
    }

    /// Item 7: a percent-decoded key with control characters cannot forge a log line (CWE-117),
    /// not even in a 401 answer.
    @Test func accessLogEscapesControlCharacters() throws {
        let dir = TempDir()
        let tokens = dir.file("tokens", Array("t0ken read\n".utf8))
        chmod(tokens, 0o600)
        let blobd = try BlobdProcess(["--tokens-file", tokens])
        let forged = "/v1/blobs/a%0A2026-01-01T00:00:00.000Z%20info%20blobd:%20forged%1B%5B31m%0D"
        #expect(try curl([blobd.baseURL + forged]).status == 401)
        #expect(eventually(within: 3) { blobd.stderr.contains("http.status=401") })
        let lines = blobd.stderr.split(separator: "\n")
        #expect(!lines.contains { $0.hasPrefix("2026-01-01") }, "\(blobd.stderr)")
        #expect(!blobd.stderr.contains("\u{1B}") && !blobd.stderr.contains("\r"))
        #expect(blobd.stderr.contains(#"blob.key="a\n2026-01-01T00:00:00.000Z info blobd: forged\u{1b}[31m\r""#), "\(blobd.stderr)")
    }

    /// Item 18: the client address comes from X-Forwarded-For or Forwarded only when the peer
    /// is a trusted proxy, by the rightmost-untrusted rule.
    @Test func trustedProxiesNameTheClient() throws {
        let blobd = try BlobdProcess(["--trusted-proxy", "127.0.0.1", "--trusted-proxy", "10.0.0.0/8"])
        let b = blobd.baseURL + "/healthz"
        _ = try curl(["-H", "X-Forwarded-For: 6.6.6.6, 203.0.113.9, 10.1.2.3", b])
        _ = try curl(["-H", "Forwarded: for=6.6.6.6, for=\"[2001:db8::17]:4711\";proto=https", "-H", "X-Forwarded-For: 198.51.100.1", b])
        _ = try curl(["-H", "X-Forwarded-For: unknown", b])
        #expect(eventually(within: 3) { blobd.stderr.components(separatedBy: "http.route=/healthz").count == 4 })
        let addresses = blobd.stderr.split(separator: "\n").filter { $0.contains("http.route=/healthz") }.map { line in
            line.split(separator: " ").first { $0.hasPrefix("client.address=") }.map { String($0.dropFirst(15)) } ?? ""
        }
        #expect(addresses.count == 3)
        #expect(addresses.first == "203.0.113.9")
        #expect(addresses.dropFirst().first == "2001:db8::17")
        #expect(addresses.last?.hasPrefix("127.0.0.1:") == true)

        let untrusting = try BlobdProcess()
        _ = try curl(["-H", "X-Forwarded-For: 203.0.113.9", untrusting.baseURL + "/healthz"])
        #expect(eventually(within: 3) { untrusting.stderr.contains("client.address=127.0.0.1:") })
        #expect(!untrusting.stderr.contains("203.0.113.9"))
    }

    /// Item 18: --public-url is the base of every Location.
    @Test func publicURLIsTheBaseOfLocations() throws {
        let blobd = try BlobdProcess(["--public-url", "https://blobs.example.com/store/"])
        let put = try curl(["-X", "PUT", "--data-binary", "x", blobd.baseURL + "/v1/blobs/aaa/b.txt"])
        #expect(put.header("Location") == "https://blobs.example.com/store/v1/blobs/aaa/b.txt")
        let created = try curl(["-X", "POST", "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Length: 1",
                                "-H", "Upload-Metadata: key Yw==", blobd.baseURL + "/v1/uploads"])
        #expect(created.status == 201)
        #expect(created.header("Location")?.hasPrefix("https://blobs.example.com/store/v1/uploads/") == true)
        let bad = try run(blobdExecutable(), ["--data-dir", TempDir().path, "--public-url", "blobs.example.com"])
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("--public-url"))
    }
}

/// A raw client socket for slow-client tests.
final class Socket {
    private let fd: Int32

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
        guard connected == 0 else {
            Glibc.close(fd)
            throw TestFailure("connect failed")
        }
    }

    deinit { Glibc.close(fd) }

    func close() { shutdown(fd, Int32(SHUT_RDWR)) }

    func send(_ text: String) {
        _ = Array(text.utf8).withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// True when the server closes (or resets) the connection within `seconds`; any bytes it
    /// sends meanwhile are dropped.
    func waitForClose(within seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, Int32(max(1, deadline.timeIntervalSinceNow * 1000))) > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return true }
        }
        return false
    }

    /// What the server sends within `seconds` (one response on a keep-alive connection).
    func receive(within seconds: Double) -> String {
        let deadline = Date().addingTimeInterval(seconds)
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while Date() < deadline {
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 50) > 0 else {
                if !received.isEmpty { break }
                continue
            }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            received += buffer[..<n]
        }
        return String(decoding: received, as: UTF8.self)
    }
}

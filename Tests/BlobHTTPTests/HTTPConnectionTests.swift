import Foundation
import HTTPCore
import Testing
import OutboundHTTP

/// `HTTPConnection` (the event deliveries' client) against a real TCP server in Python that
/// answers by path and counts the connections it accepted: a kept connection carries the next
/// request; `Connection: close`, HTTP/1.0, a body read to the end, and a server that drops an
/// idle connection each make the next request open a new one, and no request is lost.
@Suite struct HTTPConnectionTests {
    static let server = """
        import socket, sys, threading, time
        count = 0
        def serve(conn):
            global count
            f = conn.makefile("rb")
            while True:
                line = f.readline()
                if not line:
                    break
                path = line.split()[1].decode()
                length = 0
                while True:
                    h = f.readline()
                    if h in (b"\\r\\n", b""):
                        break
                    if h.lower().startswith(b"content-length:"):
                        length = int(h.split(b":")[1])
                if length:
                    f.read(length)
                body = ("%d %s" % (count, path)).encode()
                if path == "/close":
                    conn.sendall(b"HTTP/1.1 200 OK\\r\\nConnection: close\\r\\nContent-Length: %d\\r\\n\\r\\n%s" % (len(body), body))
                elif path == "/once":
                    # As http.server's default handler: HTTP/1.0, one request a connection,
                    # closed with whatever else was sent still unread (the kernel resets it).
                    conn.sendall(b"HTTP/1.0 200 OK\\r\\n\\r\\n" + body)
                    break
                elif path == "/old":
                    conn.sendall(b"HTTP/1.0 200 OK\\r\\nContent-Length: %d\\r\\n\\r\\n%s" % (len(body), body))
                elif path == "/eof":
                    conn.sendall(b"HTTP/1.1 200 OK\\r\\n\\r\\n" + body)
                    break
                elif path == "/short":
                    # The shortest answer there is, late: 16 bytes.
                    time.sleep(0.02)
                    conn.sendall(b"HTTP/1.1 204\\r\\n\\r\\n")
                elif path == "/stray":
                    conn.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\n\\r\\n%s" % (len(body), body))
                    time.sleep(0.1)
                    conn.sendall(b"X")
                elif path.startswith("/raw/"):
                    # The bytes the path names in hex, as they are, and the end of the connection.
                    conn.sendall(bytes.fromhex(path[5:]))
                    break
                elif path == "/drop":
                    conn.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\n\\r\\n%s" % (len(body), body))
                    conn.shutdown(socket.SHUT_RDWR)
                    break
                else:
                    conn.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\n\\r\\n%s" % (len(body), body))
            conn.close()
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        print(s.getsockname()[1], flush=True)
        sys.stdin.close()
        while True:
            c, _ = s.accept()
            count += 1
            threading.Thread(target=serve, args=(c,), daemon=True).start()
        """

    /// A fresh server, and a connection to it.
    func start() throws -> (HTTPConnection, Process) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", Self.server]
        let output = Pipe()
        process.standardOutput = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        var text = ""
        while !text.hasSuffix("\n") {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            guard !byte.isEmpty else { break }
            text += String(decoding: byte, as: UTF8.self)
        }
        guard let port = UInt16(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            stop(process)
            throw CocoaError(.fileReadUnknown)
        }
        return (HTTPConnection(url: try ServerURL(parsing: "http://127.0.0.1:\(port)"), timeout: 5), process)
    }

    /// SIGKILL: the test runner may block SIGTERM in the children it spawns.
    func stop(_ process: Process) {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// The body of an answer: the number of connections the server had accepted.
    func accepted(_ connection: HTTPConnection, _ path: String, body: [UInt8]? = nil) throws -> String {
        let response = try connection.send(body == nil ? "GET" : "POST", path, headers: [], body: body)
        #expect(response.status == 200)
        return String(String(decoding: response.body, as: UTF8.self).prefix { $0 != " " })
    }

    @Test func keepsTheConnectionForTheNextRequest() throws {
        let (connection, server) = try start()
        defer { stop(server) }
        #expect(try accepted(connection, "/a", body: Array("one".utf8)) == "1")
        #expect(connection.isOpen)
        #expect(try accepted(connection, "/b", body: Array("two".utf8)) == "1")
        #expect(try accepted(connection, "/c") == "1")
    }

    @Test func opensANewConnectionWhenTheAnswerClosesIt() throws {
        let (connection, server) = try start()
        defer { stop(server) }
        #expect(try accepted(connection, "/close") == "1")
        #expect(!connection.isOpen)
        #expect(try accepted(connection, "/old") == "2")
        #expect(!connection.isOpen, "HTTP/1.0 keeps no connection unless it says so")
        #expect(try accepted(connection, "/eof") == "3")
        #expect(!connection.isOpen, "a body read to the end leaves nothing to reuse")
        #expect(try accepted(connection, "/a") == "4")
        #expect(connection.isOpen)
    }

    @Test func replacesAConnectionTheServerDropped() throws {
        let (connection, server) = try start()
        defer { stop(server) }
        #expect(try accepted(connection, "/drop") == "1")
        // The server shut the connection after answering, without saying so.
        Thread.sleep(forTimeInterval: 0.1)
        #expect(try accepted(connection, "/a", body: Array("after".utf8)) == "2")
        #expect(try accepted(connection, "/b") == "2")
    }

    /// Answers to a pipeline: each request's answer, in order.
    func answers(_ connection: HTTPConnection, _ paths: [String]) -> [String] {
        let requests = paths.map { HTTPConnection.Request("POST", $0, headers: [("X-N", $0)], body: Array($0.utf8)) }
        return connection.pipeline(requests, until: .now + .seconds(10)).map { result in
            switch result {
            case .success(let response): "\(response.status) " + String(decoding: response.body, as: UTF8.self)
            case .failure(let error): "error \(error)"
            }
        }
    }

    /// The reader parses what a server sends byte by byte: a status of three digits from 100,
    /// header names lowercased, values without the blanks around them, and a line that is not a
    /// header field is an error, not a header.
    @Test func answersAreReadExactly() throws {
        let (connection, server) = try start()
        defer { stop(server) }
        func answer(_ text: String) -> Result<HTTPClientResponse, HTTPClientError> {
            let hex = Array(text.utf8).map { String(format: "%02x", $0) }.joined()
            return Result { () throws(HTTPClientError) in try connection.send("GET", "/raw/" + hex, headers: [], body: nil) }
        }
        let good = try answer("HTTP/1.1 200 OK\r\nX-Mixed-Case: \t v a l \t\r\nEMPTY:\r\nContent-Length: 2\r\n\r\nhi").get()
        #expect(good.status == 200 && String(decoding: good.body, as: UTF8.self) == "hi")
        #expect(good.headers.map { "\($0.name)=\($0.value)" } == ["x-mixed-case=v a l", "empty=", "content-length=2"])
        #expect(try answer("HTTP/1.0 999 Custom\r\nContent-Length: 0\r\n\r\n").get().status == 999)
        for bad in ["HTTP/1.1 2x0 OK\r\n\r\n", "HTTP/1.1 099 Low\r\n\r\n", "HTTP/1.1 +20 OK\r\n\r\n", "HTTP/2.0 200 OK\r\n\r\n",
                    "HTTP/1.1 200 OK\r\nBad Name: v\r\n\r\n", "HTTP/1.1 200 OK\r\n: v\r\n\r\n", "HTTP/1.1 200 OK\r\nnocolon\r\n\r\n"] {
            guard case .failure(.malformed) = answer(bad) else {
                Issue.record("accepted \(bad.debugDescription)")
                continue
            }
        }
    }

    @Test func pipelinesOnOneConnection() throws {
        let (connection, server) = try start()
        defer { stop(server) }
        let paths = (1...40).map { "/e\($0)" }
        #expect(answers(connection, paths) == paths.map { "200 1 \($0)" })
        #expect(connection.isOpen)
        #expect(answers(connection, ["/f"]) == ["200 1 /f"])
    }

    /// Answers of the fewest bytes an answer can have (16), each late: the reader, which waits
    /// until the answers left can all be there, waits for no byte more than they have.
    @Test func pipelineOfTheShortestAnswers() throws {
        let (connection, server) = try start()
        defer { stop(server) }
        #expect(answers(connection, ["/a"]) == ["200 1 /a"])
        let started = ContinuousClock.now
        #expect(answers(connection, Array(repeating: "/short", count: 12)) == Array(repeating: "204 ", count: 12))
        #expect(ContinuousClock.now - started < .seconds(4))
        #expect(answers(connection, ["/b", "/short", "/c"]) == ["200 1 /b", "204 ", "200 1 /c"])
    }

    /// Shorter answers after longer ones: the reader, which first waits for as many bytes as
    /// the shortest answer yet would take, then for the fewest they can, gets each in time.
    @Test func pipelineOfShorterAnswersAfterLongerOnes() throws {
        let (connection, server) = try start()
        defer { stop(server) }
        let paths = ["/long-a", "/long-b", "/long-c"] + Array(repeating: "/short", count: 6) + ["/d"]
        let started = ContinuousClock.now
        #expect(answers(connection, paths) == ["200 1 /long-a", "200 1 /long-b", "200 1 /long-c"] + Array(repeating: "204 ", count: 6)
            + ["200 1 /d"])
        #expect(ContinuousClock.now - started < .seconds(4))
    }

    /// A byte nothing asked for, after a pipeline's last answer, is seen before the next
    /// pipeline: that one goes on a new connection.
    @Test func aStrayByteAfterAPipelineClosesTheConnection() throws {
        let (connection, server) = try start()
        defer { stop(server) }
        #expect(answers(connection, ["/a", "/b", "/stray"]) == ["200 1 /a", "200 1 /b", "200 1 /stray"])
        Thread.sleep(forTimeInterval: 0.4)
        #expect(answers(connection, ["/c", "/d"]) == ["200 2 /c", "200 2 /d"])
    }

    /// A server that closes after an answer took none of the requests after it: they go again
    /// on a new connection, one at a time from then on, and every answer comes back in order.
    @Test func pipelineGoesOnAfterTheServerClosed() throws {
        let (connection, server) = try start()
        defer { stop(server) }
        #expect(answers(connection, ["/a", "/close", "/b", "/c"]) == ["200 1 /a", "200 1 /close", "200 2 /b", "200 2 /c"])
        #expect(answers(connection, ["/old", "/d", "/drop", "/e"]) == ["200 2 /old", "200 3 /d", "200 3 /drop", "200 4 /e"])
    }

    @Test func pipelineToNoServerFailsEveryRequest() throws {
        let (connection, server) = try start()
        stop(server)
        let results = answers(connection, ["/a", "/b", "/c"])
        #expect(results.count == 3 && results.allSatisfy { $0.hasPrefix("error") && $0.contains("cannot connect") }, "\(results)")
    }

    /// A server that answers one request a connection and closes with the rest unread (its
    /// kernel resets the connection, maybe before the answer is read): every request still gets
    /// its answer, one connection each, and the connection never pipelines to it again.
    @Test func pipelineToAServerOfOneRequestAConnection() throws {
        let (connection, server) = try start()
        defer { stop(server) }
        let requests = (1...12).map { _ in HTTPConnection.Request("POST", "/once", headers: [], body: Array(repeating: 0x61, count: 16 * 1024)) }
        let first = connection.pipeline(requests, until: .now + .seconds(20)).map { try? $0.get().status }
        #expect(first == Array(repeating: 200, count: 12), "\(first)")
        let again = connection.pipeline(Array(requests.prefix(3)), until: .now + .seconds(20)).map { try? $0.get().status }
        #expect(again == [200, 200, 200])
    }
}

import Foundation
import HTTPCore
import Testing

/// `HTTPConnection` (the event deliveries' client) against a real TCP server in Python that
/// answers by path and counts the connections it accepted: a kept connection carries the next
/// request; `Connection: close`, HTTP/1.0, a body read to the end, and a server that drops an
/// idle connection each make the next request open a new one, and no request is lost.
@Suite struct HTTPConnectionTests {
    static let server = """
        import socket, sys, threading
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
                body = str(count).encode()
                if path == "/close":
                    conn.sendall(b"HTTP/1.1 200 OK\\r\\nConnection: close\\r\\nContent-Length: %d\\r\\n\\r\\n%s" % (len(body), body))
                elif path == "/old":
                    conn.sendall(b"HTTP/1.0 200 OK\\r\\nContent-Length: %d\\r\\n\\r\\n%s" % (len(body), body))
                elif path == "/eof":
                    conn.sendall(b"HTTP/1.1 200 OK\\r\\n\\r\\n" + body)
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
        return String(decoding: response.body, as: UTF8.self)
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
}

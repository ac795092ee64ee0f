import Foundation
import LiveBlobd
import Testing

/// `blobd key`'s own HTTP/1.1 client against a server that frames answers as blobd does not
/// but a proxy in front of it may (chunked, until close, interim 100), and that misbehaves
/// (silence, a truncated body, not HTTP): a Python socket server, one connection per case,
/// which also records the exact request the client sent.
@Suite struct KeyCommandHTTPTests {
    static let script = #"""
        import json, socket, subprocess, sys, threading, time
        blobd = sys.argv[1]
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        port = server.getsockname()[1]
        base = "http://127.0.0.1:%d/base" % port

        def check(condition, what):
            if not condition:
                sys.exit("FAILED: " + what)

        def serve(answer, requests):
            conn, _ = server.accept()
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, _, body = data.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            while len(body) < length:
                body += conn.recv(65536)
            requests.append((head.decode(), body))
            if answer is None:
                time.sleep(2.5)
            else:
                conn.sendall(answer)
            conn.close()

        def key(answer, *arguments):
            requests = []
            thread = threading.Thread(target=serve, args=(answer, requests))
            thread.start()
            run = subprocess.run([blobd, "key", *arguments], capture_output=True, timeout=60,
                                 env={"BLOBD_URL": base + "/", "BLOBD_TOKEN": "tok"})
            thread.join()
            return run.returncode, run.stdout.decode(), run.stderr.decode(), requests[0]

        # Chunked, with an extension and a trailer, after an interim 100.
        chunked = (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                   b"Transfer-Encoding: chunked\r\n\r\n5;ext=1\r\n{\"key\r\n6\r\ns\":[]}\r\n0\r\nTrailer: x\r\n\r\n")
        status, out, err, (head, body) = key(chunked, "list", "--json")
        check((status, out, err) == (0, '{"keys":[]}\n', ""), "chunked: %r" % ((status, out, err),))
        lines = head.split("\r\n")
        check(lines[0] == "GET /base/v1/admin/keys HTTP/1.1", "request line %r" % lines[0])
        check(sorted(lines[1:]) == sorted(["Host: 127.0.0.1:%d" % port, "Connection: close", "Authorization: Bearer tok",
                                           "Accept: application/json"] + [l for l in lines if l.startswith("User-Agent: blobd/")]),
              "request header %r" % lines)
        check(body == b"", "no body on GET")

        # Until the connection closes, with no Content-Length.
        status, out, err, _ = key(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"keys\":[]}", "list")
        check((status, out, err) == (0, "ID  NAME  ACCESS KEY  EXPIRES  SOURCE  GRANTS\n(no keys)\n", ""), "until close: %r" % ((status, out, err),))

        # create's request: JSON with a Content-Length.
        created = json.dumps({"id": "k1", "name": "n", "grants": ["read:*", "write:b"], "token": "T", "access_key_id": "A",
                              "secret_access_key": "S", "created": "2026-01-01T00:00:00Z", "expires": "2026-01-01T00:01:00Z"}).encode()
        answer = b"HTTP/1.1 201 Created\r\nContent-Length: %d\r\n\r\n%s" % (len(created), created)
        status, out, err, (head, body) = key(answer, "create", "n", "--grant", "read", "--grant", "write:b", "--expires-in", "60")
        check(status == 0 and out == ("id:                k1\nname:              n\ngrants:            read:*,write:b\n"
                                      "expires:           2026-01-01T00:01:00Z\ntoken:             T\naccess_key_id:     A\n"
                                      "secret_access_key: S\n"), "create printed %r %r" % (out, err))
        check(head.startswith("POST /base/v1/admin/keys HTTP/1.1\r\n") and "\r\nContent-Type: application/json" in head
              and "\r\nContent-Length: %d" % len(body) in head, "create's head %r" % head)
        check(json.loads(body) == {"name": "n", "grants": ["read", "write:b"], "expires_in": 60}, "create's body %r" % body)

        # An id is one path segment, percent-encoded.
        status, out, err, (head, body) = key(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", "grant", "a b/c", "read")
        check(head.startswith("PUT /base/v1/admin/keys/a%20b%2Fc/grants HTTP/1.1\r\n"), "grant's head %r" % head)
        check(json.loads(body) == {"grants": ["read"]}, "grant's body %r" % body)
        check((status, err) == (1, "blobd key grant: 404 Not found\n"), "404 without a body: %r" % ((status, err),))

        # Refusals of other kinds exit 1 with what came.
        problem = b'{"title":"Service unavailable","status":503,"detail":"The keys of the index are not open yet."}'
        status, _, err, _ = key(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: %d\r\n\r\n%s" % (len(problem), problem), "list")
        check((status, err) == (1, "blobd key list: 503 Service unavailable: The keys of the index are not open yet.\n"), "503: %r" % err)
        status, _, err, _ = key(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 5\r\n\r\noops\n", "list")
        check((status, err) == (1, "blobd key list: 500 Server error: oops\n"), "500: %r" % err)

        # No usable answer exits 2.
        cases = [
            (None, ["--timeout", "1"], "no complete answer within 1 s"),
            (b"hello\r\n\r\n", [], "the answer is not HTTP/1.1 as expected: the status line is 'hello'"),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{", [], "the server closed the connection before its answer was complete"),
            (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n[]", [], None),
        ]
        for answer, extra, message in cases:
            status, out, err, _ = key(answer, "list", *extra)
            expected = "blobd key list: %s: %s\n" % (base, message) if message else \
                "blobd key list: blobd answered 200 with a body that is not a JSON object\n"
            check((status, out, err) == (2, "", expected), "%r: %r" % (answer, (status, out, err)))
        status, _, err, _ = key(b"HTTP/1.1 302 Found\r\nLocation: /login\r\nContent-Length: 0\r\n\r\n", "list")
        check((status, err) == (2, "blobd key list: %s answered 302 (Location: /login), not blobd's admin API; "
                                   "is --url blobd's /v1 address?\n" % base), "302: %r" % err)
        """#

    @Test func framingsAndMisbehaviour() throws {
        let result = try run("/usr/bin/python3", ["-c", Self.script, blobdExecutable()], timeout: 120)
        #expect(result.status == 0, "\(result.stderr)")
    }
}

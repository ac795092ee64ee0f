import Foundation
import LiveBlobd
import Testing

@Suite struct ProtocolTests {
    @Test func problemDetailsForEveryError() throws {
        let blobd = try BlobdProcess()
        let cases: [([String], Int)] = [
            ([blobd.baseURL + "/v1/blobs/missing"], 404),
            ([blobd.baseURL + "/nowhere"], 404),
            (["-X", "PATCH", blobd.baseURL + "/v1/blobs/k"], 405),
            (["-X", "DELETE", blobd.baseURL + "/v1/blobs"], 405),
            ([blobd.baseURL + "/v1/blobs/a%00b"], 400),
        ]
        for (arguments, status) in cases {
            let response = try curl(arguments)
            #expect(response.status == status, "\(arguments)")
            #expect(response.header("Content-Type") == "application/problem+json")
            let json = response.json
            #expect(json["status"] as? Int == status)
            #expect(json["type"] is String && json["title"] is String && json["detail"] is String)
        }
        let notAllowed = try curl(["-X", "PATCH", blobd.baseURL + "/v1/blobs/k"])
        #expect(notAllowed.header("Allow") == "GET, HEAD, PUT, DELETE")
        #expect(try curl(["-X", "PUT", blobd.baseURL + "/v1/blobs"]).header("Allow") == "GET, HEAD, POST")
    }

    @Test func keyRules() throws {
        let blobd = try BlobdProcess()
        let base = blobd.baseURL + "/v1/blobs/"
        for bad in ["a%00b", "a%0Ab", "%7F", "a/../b", "..", "a/./b", "a//b", "a/", "%ZZ", "%F", "%FF%FE", "%C3",
                    String(repeating: "k", count: 1089)] {
            let response = try curl(["-X", "PUT", "--data-binary", "x", base + bad])
            #expect(response.status == 400, "\(bad)")
            #expect(response.header("Content-Type") == "application/problem+json")
        }
        #expect(try curl([blobd.baseURL + "/v1/blobs?limit=1000"]).json["blobs"] as? [Any] != nil)
        #expect((try curl([blobd.baseURL + "/v1/blobs"]).json["blobs"] as? [Any])?.isEmpty == true, "nothing was stored")

        // %2F is a slash, + is a plus, the query is not part of the key, and bytes are kept as sent.
        #expect(try curl(["-X", "PUT", "--data-binary", "slash", base + "aaa%2Fb"]).json["key"] as? String == "aaa/b")
        #expect(try curl([base + "aaa/b"]).text == "slash")
        #expect(try curl(["-X", "PUT", "--data-binary", "plus", base + "a+b?ignored=1"]).json["key"] as? String == "a+b")
        #expect(try curl([base + "a%2Bb"]).text == "plus")
        #expect(try curl(["-X", "PUT", "--data-binary", "nfc", base + "caf%C3%A9"]).status == 201)
        #expect(try curl(["-X", "PUT", "--data-binary", "nfd", base + "cafe%CC%81"]).status == 201)
        #expect(try curl([base + "caf%C3%A9"]).text == "nfc")
        #expect(try curl([base + "cafe%CC%81"]).text == "nfd")
        let longest = String(repeating: "k", count: 1088)
        #expect(try curl(["-X", "PUT", "--data-binary", "long", base + longest]).status == 201)
        // A key's own empty segments travel as %2F, and Location names them the same way.
        let directory = try curl(["-X", "PUT", "--data-binary", "marker", base + "photos%2F"])
        #expect(directory.status == 201)
        #expect(directory.json["key"] as? String == "photos/")
        #expect(directory.header("Location") == "/v1/blobs/photos%2F")
        #expect(try curl(["-X", "PUT", "--data-binary", "double", base + "aaa%2F%2Fb"]).json["key"] as? String == "aaa//b")
        #expect(try curl([base + "aaa%2F%2Fb"]).text == "double")
        #expect(try curl([base + "photos%2F"]).text == "marker")
    }

    @Test func headHasNoBody() throws {
        let blobd = try BlobdProcess()
        _ = try curl(["-X", "PUT", "--data-binary", "0123456789", blobd.baseURL + "/v1/blobs/h"])
        let response = try rawExchange(port: blobd.port, Array("HEAD /v1/blobs/h HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8))
        #expect(response.hasPrefix("HTTP/1.1 200"))
        #expect(response.contains("Content-Length: 10\r\n"))
        #expect(response.hasSuffix("\r\n\r\n"), "no body after the head")
    }

    @Test func earlyErrorIsSentBeforeTheBody() throws {
        let blobd = try BlobdProcess(["--max-blob-size", "100"])
        // With Expect: 100-continue the final status comes at once, and no 100 is sent.
        let request = "PUT /v1/blobs/big HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\nExpect: 100-continue\r\n\r\n"
        let response = try rawExchange(port: blobd.port, Array(request.utf8), timeout: 3)
        #expect(response.hasPrefix("HTTP/1.1 413"))
        #expect(!response.contains("100 Continue"))
        #expect(response.contains("application/problem+json"))

        let ok = "PUT /v1/blobs/small HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"
        let continued = try rawExchange(port: blobd.port, Array(ok.utf8), timeout: 1)
        #expect(continued.hasPrefix("HTTP/1.1 100 Continue"))
    }

    @Test func framingErrorsAreRejected() throws {
        let blobd = try BlobdProcess()
        let requests = [
            "PUT /v1/blobs/s HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
            "PUT /v1/blobs/s HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
            "PUT /v1/blobs/s HTTP/1.1\r\nHost: x\r\nContent-Length: -3\r\n\r\nabc",
            "PUT /v1/blobs/s HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\nabc",
            "GET /v1/blobs/s HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",
            "GET /v1/blobs/s HTTP/1.1\r\nHost : x\r\n\r\n",
        ]
        for request in requests {
            let response = try rawExchange(port: blobd.port, Array(request.utf8), timeout: 3)
            #expect(response.hasPrefix("HTTP/1.1 400"), "\(request.debugDescription) → \(response.prefix(40).debugDescription)")
        }
        // A request line without a method and target: libmicrohttpd closes the connection unanswered.
        let garbage = try rawExchange(port: blobd.port, Array("GARBAGE\r\n\r\n".utf8), timeout: 3)
        #expect(garbage.isEmpty || garbage.hasPrefix("HTTP/1.1 400"))
        #expect(try curl([blobd.baseURL + "/v1/blobs/s"]).status == 404, "no smuggled request was stored")
        #expect(try curl([blobd.baseURL + "/healthz"]).status == 200)
    }

    @Test func hostileInputGetsA4xxAndTheServerKeepsServing() throws {
        let blobd = try BlobdProcess(["--connection-timeout", "2"])
        _ = try curl(["-X", "PUT", "--data-binary", "0123456789", blobd.baseURL + "/v1/blobs/k"])
        let answered: [(String, String)] = [
            ("GET /v1/blobs/\(String(repeating: "k", count: 2000)) HTTP/1.1\r\nHost: x\r\n\r\n", "400"),
            ("GET /v1/blobs/a%00b HTTP/1.1\r\nHost: x\r\n\r\n", "400"),
            ("GET /v1/blobs/a\u{01}b HTTP/1.1\r\nHost: x\r\n\r\n", "400"),
            ("GET /v1/blobs/a/../k HTTP/1.1\r\nHost: x\r\n\r\n", "400"),
            ("GET /v1/blobs/%G1 HTTP/1.1\r\nHost: x\r\n\r\n", "400"),
            ("BREW /v1/blobs/k HTTP/1.1\r\nHost: x\r\n\r\n", "405"),
            ("BREW /teapot HTTP/1.1\r\nHost: x\r\n\r\n", "404"),
            ("GET /v1/blobs/k HTTP/1.1\r\nHost: x\r\nRange: bytes=\(String(repeating: "0-0,", count: 3000))0-0\r\n\r\n", "200"),
            ("GET /v1/blobs/k HTTP/1.1\r\nHost: x\r\nRange: bytes=18446744073709551616-18446744073709551617\r\n\r\n", "416"),
            ("GET /v1/blobs/k HTTP/1.1\r\nHost: x\r\nIf-Modified-Since: Feb 31 99 25:61:61\r\n\r\n", "200"),
            ("GET /v1/blobs/k HTTP/1.1\r\nHost: x\r\nRange: bytes=0-1\r\nIf-Range: yesterday\r\n\r\n", "200"),
            ("PUT /v1/blobs/k HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", "400"),
            ("PUT /v1/blobs/k HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n", "4"),
        ]
        for (request, status) in answered {
            let closing = request.replacingOccurrences(of: "Host: x\r\n", with: "Host: x\r\nConnection: close\r\n")
            let response = try rawExchange(port: blobd.port, Array(closing.utf8), timeout: 3)
            #expect(response.hasPrefix("HTTP/1.1 \(status)"), "\(request.prefix(60).debugDescription) → \(response.prefix(30).debugDescription)")
        }
        // Request lines libmicrohttpd cannot parse: it closes the connection without an answer.
        for garbage in ["GARBAGE\r\n\r\n", "GET\r\n\r\n", "\u{00}\u{01}\u{02}\r\n\r\n"] {
            let response = try rawExchange(port: blobd.port, Array(garbage.utf8), timeout: 3)
            #expect(response.isEmpty || response.hasPrefix("HTTP/1.1 4"))
        }
        #expect(try curl([blobd.baseURL + "/v1/blobs/k"]).text == "0123456789", "still serving, nothing changed")
    }

    @Test func hugeHeadersAreRefused() throws {
        let blobd = try BlobdProcess()
        let request = "GET /v1/blobs/k HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 65536))\r\n\r\n"
        let response = try rawExchange(port: blobd.port, Array(request.utf8), timeout: 3)
        #expect(response.hasPrefix("HTTP/1.1 431") || response.hasPrefix("HTTP/1.1 400"), "\(response.prefix(40))")
        #expect(try curl([blobd.baseURL + "/healthz"]).status == 200)
    }

    @Test func health() throws {
        let blobd = try BlobdProcess()
        let response = try curl([blobd.baseURL + "/healthz"])
        #expect(response.status == 200)
        #expect(response.text == "ok\n")
    }
}

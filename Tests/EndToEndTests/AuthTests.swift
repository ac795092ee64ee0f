import Foundation
import LiveBlobd
import Testing

@Suite struct AuthTests {
    static let tokens = """
        # blobd tokens
        reader-token read
        writer-token write   # uploads only
        deleter-token delete
        admin-token read,write,delete

        """

    func tokensFile(_ dir: TempDir, _ text: String = AuthTests.tokens) -> String {
        let path = dir.file("tokens", Array(text.utf8))
        chmod(path, 0o600)
        return path
    }

    /// Every scope combination on every route.
    @Test func scopesOnEveryRoute() throws {
        let dir = TempDir()
        let blobd = try BlobdProcess(["--tokens-file", tokensFile(dir)])
        let b = blobd.baseURL
        #expect(try curl(["-X", "PUT", "--data-binary", "seed", "-H", "Authorization: Bearer admin-token", b + "/v1/blobs/seed"]).status == 201)
        // (curl arguments, scope needed, status when allowed)
        var n = 0
        func operations() -> [([String], String?, Int)] {
            n += 1
            return [
                ([b + "/v1/blobs/seed"], "read", 200),
                (["-I", b + "/v1/blobs/seed"], "read", 200),
                ([b + "/v1/blobs?limit=5"], "read", 200),
                (["-X", "PUT", "--data-binary", "x", b + "/v1/blobs/new\(n)"], "write", 201),
                (["--data-binary", "post \(n)", b + "/v1/blobs"], "write", 201),
                (["-X", "DELETE", b + "/v1/blobs/seed"], "delete", 204),
                ([b + "/healthz"], nil, 200),
                ([b + "/readyz"], nil, 200),
                ([b + "/metrics"], nil, 200),
            ]
        }
        let tokens: [(String?, Set<String>)] = [
            (nil, []), ("unknown-token", []), ("reader-token", ["read"]), ("writer-token", ["write"]),
            ("deleter-token", ["delete"]), ("admin-token", ["read", "write", "delete"]),
        ]
        for (token, scopes) in tokens {
            for (arguments, scope, allowedStatus) in operations() {
                if scope != nil {
                    // Make sure there is something to read and delete.
                    _ = try curl(["-X", "PUT", "--data-binary", "seed", "-H", "Authorization: Bearer admin-token", b + "/v1/blobs/seed"])
                }
                let auth = token.map { ["-H", "Authorization: Bearer \($0)"] } ?? []
                let response = try curl(auth + arguments)
                let expected: Int
                if scope == nil || scopes.contains(scope ?? "") {
                    expected = allowedStatus
                } else if token == nil || token == "unknown-token" {
                    expected = 401
                } else {
                    expected = 403
                }
                #expect(response.status == expected, "\(token ?? "no token") \(arguments)")
                if expected == 401 {
                    #expect(response.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
                }
                if expected == 401 || expected == 403, !arguments.contains("-I") {
                    #expect(response.header("Content-Type") == "application/problem+json")
                    #expect(response.json["status"] as? Int == expected)
                }
            }
        }
        #expect(try curl(["-H", "Authorization: Basic YWRtaW46eA==", b + "/v1/blobs/seed"]).status == 401)
    }

    @Test func publicRead() throws {
        let dir = TempDir()
        let blobd = try BlobdProcess(["--tokens-file", tokensFile(dir), "--public-read"])
        let b = blobd.baseURL
        #expect(try curl(["-X", "PUT", "--data-binary", "pub", "-H", "Authorization: Bearer writer-token", b + "/v1/blobs/p"]).status == 201)
        #expect(try curl([b + "/v1/blobs/p"]).text == "pub")
        #expect(try curl(["-I", b + "/v1/blobs/p"]).status == 200)
        #expect(try curl([b + "/v1/blobs"]).status == 200)
        #expect(try curl(["-X", "PUT", "--data-binary", "x", b + "/v1/blobs/q"]).status == 401)
        #expect(try curl(["-X", "DELETE", b + "/v1/blobs/p"]).status == 401)
        #expect(try curl(["-X", "DELETE", "-H", "Authorization: Bearer reader-token", b + "/v1/blobs/p"]).status == 403)
    }

    @Test func publicReadFromEnvironment() throws {
        let dir = TempDir()
        let blobd = try BlobdProcess(environment: ["BLOBD_TOKENS_FILE": tokensFile(dir), "BLOBD_PUBLIC_READ": "true"])
        #expect(try curl([blobd.baseURL + "/v1/blobs"]).status == 200)
        #expect(try curl(["-X", "PUT", "--data-binary", "x", blobd.baseURL + "/v1/blobs/q"]).status == 401)
    }

    @Test func authIsDecidedBeforeTheBody() throws {
        let dir = TempDir()
        let blobd = try BlobdProcess(["--tokens-file", tokensFile(dir)])
        let request = "PUT /v1/blobs/k HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\nExpect: 100-continue\r\n\r\n"
        let response = try rawExchange(port: blobd.port, Array(request.utf8), timeout: 3)
        #expect(response.hasPrefix("HTTP/1.1 401"))
        #expect(!response.contains("100 Continue"))
        let forbidden = "PUT /v1/blobs/k HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer reader-token\r\nContent-Length: 100000000\r\nExpect: 100-continue\r\n\r\n"
        #expect(try rawExchange(port: blobd.port, Array(forbidden.utf8), timeout: 3).hasPrefix("HTTP/1.1 403"))
    }

    @Test func sighupReloadsTokensWithoutDroppingConnections() throws {
        let dir = TempDir()
        let file = tokensFile(dir)
        let blobd = try BlobdProcess(["--tokens-file", file])
        let b = blobd.baseURL
        let bytes = testBytes(2 * 1024 * 1024, seed: 3)
        #expect(try curl(["-T", dir.file("b", bytes), "-H", "Authorization: Bearer admin-token", b + "/v1/blobs/big"]).status == 201)
        #expect(try curl(["-H", "Authorization: Bearer fresh-token", b + "/v1/blobs/big"]).status == 401)

        let out = dir.path + "/out"
        let download = ChildProcess()
        download.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        download.arguments = ["-sS", "--limit-rate", "2M", "-H", "Authorization: Bearer admin-token", "-o", out, b + "/v1/blobs/big"]
        try download.run()

        try Data((AuthTests.tokens + "fresh-token read\n").utf8).write(to: URL(fileURLWithPath: file))
        kill(blobd.pid, SIGHUP)
        #expect(eventually { (try? curl(["-H", "Authorization: Bearer fresh-token", b + "/v1/blobs/big"]).status) == 200 })
        download.waitUntilExit()
        #expect(download.terminationStatus == 0)
        #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: out))) == bytes)

        // A broken file is refused and the tokens in force stay.
        try Data("fresh-token superpowers\n".utf8).write(to: URL(fileURLWithPath: file))
        kill(blobd.pid, SIGHUP)
        #expect(eventually { blobd.stderr.contains("not reloaded") })
        #expect(try curl(["-H", "Authorization: Bearer fresh-token", b + "/v1/blobs/big"]).status == 200)
    }

    @Test func startupSaysWhetherAccessIsOpenAndRefusesExposedOrBadTokens() throws {
        let open = try BlobdProcess()
        #expect(eventually { open.stderr.contains("open access") })
        let dir = TempDir()
        let file = tokensFile(dir)
        chmod(file, 0o644)
        let exposed = try run(blobdExecutable(), ["--data-dir", dir.path + "/d", "--listen", "127.0.0.1:0", "--tokens-file", file], timeout: 30)
        #expect(exposed.status == 64)
        #expect(exposed.stderr.contains("readable by others"))
        let badFile = dir.file("bad", Array("t wizard\n".utf8))
        chmod(badFile, 0o600)
        let bad = try run(blobdExecutable(), ["--data-dir", dir.path + "/d", "--listen", "127.0.0.1:0", "--tokens-file", badFile], timeout: 30)
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("line 1: unknown action 'wizard'"))
    }
}

import Foundation
import LiveBlobd
import Testing

/// Issue 20 item 11: what blobd let out (passwords in logs, paths in /readyz, active content
/// on its origin, world-readable files, a tokens file others can read or write).
@Suite struct ExposureTests {
    /// A PostgreSQL password, in the authority or as `?password=`, is in no line blobd writes:
    /// not the start line, not the connection failure.
    @Test func postgresPasswordsAreNeverLogged() throws {
        let dir = TempDir()
        for url in ["postgres://blobd:SECRET1@127.0.0.1:1/db?password=SECRET2",
                    "postgresql://blobd@127.0.0.1:1/db?sslmode=disable&password=SECRET2&sslpassword=SECRET3"] {
            let result = try run(blobdExecutable(), ["--data-dir", dir.path + "/d", "--listen", "127.0.0.1:0", "--index", url], timeout: 30)
            #expect(result.status == 1, "PostgreSQL unreachable: \(result.stderr)")
            #expect(result.stderr.contains("cannot reach the PostgreSQL index"))
            #expect(result.stderr.contains("Cluster node"))
            #expect(result.stderr.contains("password=***"))
            #expect(!result.stderr.contains("SECRET"), "\(result.stderr)")
            let check = try run(blobdExecutable(), ["check-config", "--index", url])
            #expect(check.status == 0)
            #expect(!String(decoding: check.stdout, as: UTF8.self).contains("SECRET"))
        }
    }

    /// An anonymous /readyz that fails names no path and no index error; the log has them.
    @Test func unreadyAnswerHidesPathsAndErrors() throws {
        let blobd = try BlobdProcess()
        #expect(try curl([blobd.baseURL + "/readyz"]).status == 200)
        #expect(rename(blobd.dataDir + "/blobs", blobd.dataDir + "/blobs.moved") == 0)
        let unready = try curl([blobd.baseURL + "/readyz"])
        #expect(unready.status == 503)
        #expect(unready.json["detail"] as? String == "The data directory or its index is not usable; the log says why.")
        #expect(!unready.text.contains(blobd.dataDir) && !unready.text.contains("/tmp"), "\(unready.text)")
        #expect(eventually { blobd.stderr.contains("Not ready") && blobd.stderr.contains(blobd.dataDir) })
        #expect(rename(blobd.dataDir + "/blobs.moved", blobd.dataDir + "/blobs") == 0)
    }

    /// Every blob answer says nosniff; types a browser would run are also sandboxed, on /v1
    /// and on S3 (whose response-content-type may make any object text/html).
    @Test func activeContentIsSandboxedInBothDialects() throws {
        let blobd = try BlobdProcess(["--s3-listen", "127.0.0.1:0"])
        let s3 = "http://127.0.0.1:\(try #require(blobd.s3Port))"
        #expect(try curl(["-X", "PUT", s3 + "/site"]).status == 200)
        let cases: [(type: String, sandboxed: Bool)] = [
            ("text/html", true), ("text/html; charset=utf-8", true), ("TEXT/HTML", true), ("application/xhtml+xml", true),
            ("image/svg+xml", true), ("text/xml", true), ("application/xml", true), ("application/javascript", true),
            ("text/javascript", true), ("image/png", false), ("text/plain", false), ("application/pdf", false),
            ("application/octet-stream", false), ("video/mp4", false),
        ]
        for (index, item) in cases.enumerated() {
            let key = "site/page\(index)"
            #expect(try curl(["-X", "PUT", "-H", "Content-Type: \(item.type)", "--data-binary", "<script>alert(1)</script>",
                              blobd.baseURL + "/v1/blobs/" + key]).status == 201)
            for url in [blobd.baseURL + "/v1/blobs/" + key, s3 + "/" + key] {
                for extra in [[], ["-I"], ["-r", "0-3"]] {
                    let answer = try curl(extra + [url])
                    #expect(answer.status == (extra.first == "-r" ? 206 : 200))
                    #expect(answer.header("X-Content-Type-Options") == "nosniff", "\(item.type) \(url) \(extra)")
                    #expect(answer.header("Content-Security-Policy") == (item.sandboxed ? "sandbox" : nil), "\(item.type) \(url) \(extra)")
                }
            }
        }
        let overridden = try curl([s3 + "/site/page9?response-content-type=text/html"])
        #expect(overridden.header("Content-Type") == "text/html")
        #expect(overridden.header("Content-Security-Policy") == "sandbox")
        #expect(overridden.header("X-Content-Type-Options") == "nosniff")
    }

    /// A tokens file that its group or others can write, or others can read, is refused at
    /// start (exit 64, as every bad setting) and at SIGHUP (the tokens in force stay). A group
    /// may read it (root-owned, blobd's group), as deploy/README says.
    @Test func tokensFileModesAreEnforcedAtStartAndReload() throws {
        let dir = TempDir()
        let file = dir.file("tokens", Array("admin-token read,write,delete\n".utf8))
        for mode: mode_t in [0o644, 0o604, 0o620, 0o602, 0o666] {
            chmod(file, mode)
            let refused = try run(blobdExecutable(), ["--data-dir", dir.path + "/d", "--listen", "127.0.0.1:0", "--tokens-file", file], timeout: 30)
            #expect(refused.status == 64, "mode \(String(mode, radix: 8)): \(refused.stderr)")
            #expect(refused.stderr.contains("chmod 600"))
            #expect(try run(blobdExecutable(), ["check-config", "--tokens-file", file]).status == 64)
        }
        chmod(file, 0o640)
        let blobd = try BlobdProcess(["--tokens-file", file])
        let b = blobd.baseURL
        #expect(try curl(["-H", "Authorization: Bearer admin-token", b + "/v1/blobs"]).status == 200)
        try Data("other-token read,write,delete\n".utf8).write(to: URL(fileURLWithPath: file))
        chmod(file, 0o604)
        kill(blobd.pid, SIGHUP)
        #expect(eventually { blobd.stderr.contains("Tokens file not reloaded") && blobd.stderr.contains("readable by others") })
        #expect(try curl(["-H", "Authorization: Bearer admin-token", b + "/v1/blobs"]).status == 200, "the old tokens stay")
        #expect(try curl(["-H", "Authorization: Bearer other-token", b + "/v1/blobs"]).status == 401)
        chmod(file, 0o600)
        kill(blobd.pid, SIGHUP)
        #expect(eventually { (try? curl(["-H", "Authorization: Bearer other-token", b + "/v1/blobs"]).status) == 200 })
    }

    /// Blob files, upload files and folders are 0600 and 0700 whatever the umask blobd starts
    /// with (here 000, which used to give 0644 files and 0755 folders).
    @Test func filesAndFoldersAreTheOwnersOnlyWhateverTheUmask() throws {
        let dir = TempDir()
        let data = dir.path + "/data"
        let blobd = ChildProcess()
        blobd.executableURL = URL(fileURLWithPath: "/bin/sh")
        blobd.arguments = ["-c", "umask 000; exec \"$0\" --data-dir \"$1\" --listen 127.0.0.1:0 2>\"$2\"", blobdExecutable(), data, dir.path + "/err"]
        try blobd.run()
        defer { kill(blobd.processIdentifier, SIGKILL); blobd.waitUntilExit() }
        var port = 0
        #expect(eventually {
            let text = (try? String(contentsOfFile: dir.path + "/err", encoding: .utf8)) ?? ""
            port = text.range(of: "listening on http://127.0.0.1:").flatMap { Int(text[$0.upperBound...].prefix { $0.isNumber }) } ?? 0
            return port != 0
        })
        let b = "http://127.0.0.1:\(port)"
        #expect(try curl(["-X", "PUT", "--data-binary", "secret", b + "/v1/blobs/k"]).status == 201)
        let create = try curl(["-X", "POST", "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Length: 10", "-H", "Upload-Metadata: key dXA=", b + "/v1/uploads"])
        #expect(create.status == 201)
        var files = 0, folders = 0
        let enumerator = FileManager.default.enumerator(atPath: data)
        while let name = enumerator?.nextObject() as? String {
            var info = stat()
            #expect(lstat(data + "/" + name, &info) == 0)
            if info.st_mode & 0o170000 == 0o040000 {
                folders += 1
                #expect(info.st_mode & 0o777 == 0o700, "\(name): \(String(info.st_mode & 0o777, radix: 8))")
            } else {
                files += 1
                #expect(info.st_mode & 0o777 == 0o600, "\(name): \(String(info.st_mode & 0o777, radix: 8))")
            }
        }
        var top = stat()
        #expect(stat(data, &top) == 0 && top.st_mode & 0o777 == 0o700)
        #expect(files >= 4, "the blob, the upload, the index, the lock: \(files)")
        #expect(folders >= 256)
    }
}

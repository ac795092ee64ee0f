import Foundation
import HTTPTesting
import LiveBlobd
import Testing

/// The web page at /ui/ (issue 24): its files as ui/ holds them, embedded in the binary, with a
/// content security policy that allows nothing from elsewhere and nothing inline; `--no-ui`.
@Suite struct WebUITests {
    /// The repository's ui/ folder.
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("ui")

    static let types = ["html": "text/html; charset=utf-8", "css": "text/css; charset=utf-8",
                        "js": "text/javascript; charset=utf-8", "svg": "image/svg+xml"]

    @Test(arguments: Mode.selected) func servesEveryFileOfUIFolder(_ mode: Mode) throws {
        let server = try TestServer(mode)
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.folder.path).sorted()
        #expect(names.contains("index.html") && names.contains("tus.js"), "\(names)")
        for name in names {
            let bytes = try [UInt8](Data(contentsOf: Self.folder.appendingPathComponent(name)))
            let response = try server.v1.get("/ui/" + name)
            #expect(response.status == 200, "\(name)")
            #expect(response.body == bytes, "/ui/\(name) differs from ui/\(name): run python3 tools/embed-ui.py and rebuild")
            #expect(response.header("Content-Type") == Self.types[(name as NSString).pathExtension], "\(name)")
            #expect(response.header("Content-Security-Policy") == "default-src 'self'", "\(name)")
            #expect(response.header("X-Content-Type-Options") == "nosniff", "\(name)")
            #expect(response.header("Cache-Control") == "no-cache", "\(name)")
            #expect(response.header("ETag")?.hasPrefix("\"") == true, "\(name)")
        }
    }

    @Test(arguments: Mode.selected) func pageAnswers(_ mode: Mode) throws {
        let server = try TestServer(mode)
        let page = try server.v1.get("/ui/")
        #expect(page.status == 200)
        #expect(page.header("Content-Type") == "text/html; charset=utf-8")
        #expect(page.text.contains("<script type=\"module\" src=\"main.js\"></script>"))
        // No inline script or style: the policy would refuse them.
        #expect(!page.text.contains("<script>") && !page.text.contains("<style") && !page.text.contains(" style="))
        let etag = try #require(page.header("ETag"))
        let again = try server.v1.get("/ui/", ["If-None-Match: W/\"other\", \(etag)"])
        #expect(again.status == 304)
        #expect(again.body.isEmpty)
        #expect(again.header("ETag") == etag)
        #expect(try server.v1.get("/ui/", ["If-None-Match: \"other\""]).status == 200)
        let redirect = try server.v1.get("/ui")
        #expect(redirect.status == 308)
        #expect(redirect.header("Location") == "/ui/")
        #expect(try server.v1.get("/ui/missing.js").status == 404)
        #expect(try server.v1.get("/ui/../v1/whoami").status == 404)
        let post = try server.v1.send("POST", "/ui/", body: [1])
        #expect(post.status == 405)
        #expect(post.header("Allow") == "GET, HEAD")
        let about = try server.v1.get("/ui/about.json")
        #expect(about.status == 200)
        #expect(about.json["version"] as? String == (mode == .inProcess ? "test" : about.json["version"] as? String))
        #expect(about.json["node"] is NSNull)
        let head = try server.v1.send("HEAD", "/ui/app.css")
        #expect(head.status == 200 && head.body.isEmpty)
    }

    /// The page needs no token: a server with tokens still serves it to anyone.
    @Test(arguments: Mode.selected) func pageNeedsNoToken(_ mode: Mode) throws {
        let server = try TestServer(mode, ServerSettings(tokens: "secret-token-1 read\n"))
        #expect(try server.v1.get("/ui/").status == 200)
        #expect(try server.v1.get("/ui/main.js").status == 200)
        #expect(try server.v1.get("/v1/blobs?prefix=").status == 401)
    }

    @Test(arguments: Mode.selected) func noUI(_ mode: Mode) throws {
        let server = try TestServer(mode, ServerSettings(webUI: false))
        #expect(try server.v1.get("/ui/").status == 404)
        #expect(try server.v1.get("/ui/main.js").status == 404)
        #expect(try server.v1.get("/ui").status == 404)
        #expect(try server.v1.get("/healthz").status == 200)
    }

    /// Sources/BlobAPIv1/UIAssets/ and UIAssets.generated.swift are what tools/embed-ui.py makes of ui/.
    @Test func generatedFileIsCurrent() throws {
        let root = Self.folder.deletingLastPathComponent().path
        let result = try run("/usr/bin/env", ["python3", root + "/tools/embed-ui.py", "--check"])
        #expect(result.status == 0, "\(result.stderr)")
    }
}

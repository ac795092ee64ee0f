import Foundation
import LiveBlobd
import Testing

/// The web page at /ui/ (issue 24) in headless Chromium, driven by Selenium
/// (Tests/Browser/ui_page_test.py): log in, browse 3,000 keys, a 200 MiB upload cut halfway and
/// resumed after a reload, drag and drop, pause/resume/cancel and the retry after a lost connection,
/// previews (image, audio and video with a seek, PDF, text), the keyboard (Tab stops and their
/// names, the dialogs), delete, a read-only token, share links, an admin's new key.
/// Screenshots of the main views go to .build/ui-screenshots (docs/screenshots holds a copy).
/// Also `/v1/admin/buckets/B/public` with a real client.
@Suite(.serialized) struct WebPageTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let adminToken = "admin-token-0123456789", readerToken = "reader-token-0123456789"

    static func start(_ arguments: [String] = []) throws -> (BlobdProcess, TempDir) {
        let dir = TempDir("blobd-ui")
        let bootstrap = dir.file("bootstrap.json", Array("""
            {"buckets": [{"name": "big"}, {"name": "photos"}, {"name": "inbox"}],
             "keys": [{"name": "admin", "grants": ["admin:*", "read:*", "write:*", "delete:*", "share:*"], "token": "\(adminToken)"},
                      {"name": "reader", "grants": ["read:*"], "token": "\(readerToken)"},
                      {"name": "photos-admin", "grants": ["admin:photos", "read:photos"], "token": "photos-admin-0123456789"}]}
            """.utf8))
        return (try BlobdProcess(["--bootstrap", bootstrap] + arguments), dir)
    }

    @Test(.timeLimit(.minutes(6))) func pageInChromium() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"),
              FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver"),
              FileManager.default.isExecutableFile(atPath: "/usr/bin/ffmpeg") else {
            Issue.record("chromium, chromium-driver or ffmpeg (the test video) is not installed: `make test` installs them")
            return
        }
        let (blobd, dir) = try Self.start()
        let screenshots = Self.root.appendingPathComponent(".build/ui-screenshots").path
        try? FileManager.default.createDirectory(atPath: screenshots, withIntermediateDirectories: true)
        let result = try run("/usr/bin/env", [
            "BASE=\(blobd.baseURL)", "ADMIN=\(Self.adminToken)", "READER=\(Self.readerToken)", "OUT=\(screenshots)", "WORK=\(dir.path)",
            "python3", Self.root.appendingPathComponent("Tests/Browser/ui_page_test.py").path,
        ], timeout: 300)
        let output = String(decoding: result.stdout, as: UTF8.self)
        #expect(result.status == 0, "\(output)\n\(result.stderr)")
        #expect(output.contains("all steps passed"), "\(output)")
        let log = blobd.stderr.split(separator: "\n")
        // Each media preview's seek went out as range requests on the page's share link of it
        // (`ranged-key KEY /s/ID` lines; the access log names the link as the principal).
        let ranged = output.split(separator: "\n").filter { $0.hasPrefix("ranged-key ") }.map { $0.split(separator: " ") }
        #expect(ranged.map { String($0[1]) }.sorted() == ["photos/clip.mp4", "photos/tone.wav"], "\(output)")
        for line in ranged where line.count == 3 {
            let share = "principal=share:" + line[2].dropFirst("/s/".count)
            let answers = log.filter { $0.contains("http.route=/s/{id} ") && $0.contains("http.status=206 ") && $0.split(separator: " ").contains(Substring(share)) }
            #expect(answers.count >= 2, "\(line[1]): the player's first range and the seek's: \(answers)")
        }
        // A cancelled upload was terminated with tus's DELETE.
        let cancelled = output.split(separator: "\n").filter { $0.hasPrefix("terminated-upload ") }.map { $0.split(separator: " ")[1] }
        #expect(cancelled == ["inbox/cancelled.bin"], "\(output)")
        let terminations = log.filter { $0.contains("http.method=DELETE") && $0.contains("/v1/uploads/") && $0.contains("http.status=204") }
        #expect(terminations.count == 1, "one tus DELETE answered 204: \(terminations)")
        // Every other upload finished, so no partial upload is left on disk.
        let partial = try FileManager.default.contentsOfDirectory(atPath: blobd.dataDir + "/uploads")
        #expect(partial.isEmpty, "upload files left: \(partial)")
        for name in ["login", "browse", "upload", "upload-controls", "new-folder", "details", "video", "pdf", "read-only", "share", "shares",
                     "keys", "bucket-settings"] {
            #expect(FileManager.default.fileExists(atPath: screenshots + "/\(name).png"), "screenshot \(name)")
        }
    }

    /// GET|PUT /v1/admin/buckets/B/public: prefixes anonymous callers may read, kept as the
    /// bucket's policy (S3 GetBucketPolicy shows it); admin on the bucket only; 400, 404, 415.
    @Test func publicPrefixes() throws {
        let (blobd, _) = try Self.start()
        let result = try run("/usr/bin/env", ["BASE=\(blobd.baseURL)", "python3", "-c", """
            import json, os, requests
            B = os.environ["BASE"]
            def call(method, path, token="\(Self.adminToken)", **kw):
                headers = kw.pop("headers", {})
                if token: headers["Authorization"] = "Bearer " + token
                return requests.request(method, B + path, headers=headers, **kw)
            def check(ok, what):
                if not ok: raise SystemExit("FAILED: " + what)
            P = "/v1/admin/buckets/photos/public"
            r = call("GET", P); check((r.status_code, r.json()) == (200, {"prefixes": []}), f"unset: {r.status_code} {r.text}")
            for key in ["pub/a.txt", "pub/deep/b.txt", "private.txt"]:
                check(call("PUT", "/v1/blobs/photos/" + key, data=b"x").status_code == 201, key)
            check(requests.get(B + "/v1/blobs/photos/pub/a.txt").status_code == 401, "closed before")
            r = call("PUT", P, json={"prefixes": ["pub/", "pub/", "docs/"]})
            check((r.status_code, r.json()) == (200, {"prefixes": ["docs/", "pub/"]}), f"put: {r.status_code} {r.text}")
            check(call("GET", P).json() == {"prefixes": ["docs/", "pub/"]}, "get back")
            check(requests.get(B + "/v1/blobs/photos/pub/deep/b.txt").status_code == 200, "anonymous read of pub/")
            check(requests.get(B + "/v1/blobs?prefix=photos/pub/").status_code == 200, "anonymous listing of pub/")
            check(requests.get(B + "/v1/blobs/photos/private.txt").status_code == 401, "the rest stays closed")
            check(requests.put(B + "/v1/blobs/photos/pub/new", data=b"x").status_code == 401, "no anonymous write")
            r = call("PUT", P, json={"prefixes": [""]}); check(r.json() == {"prefixes": [""]}, "whole bucket")
            check(requests.get(B + "/v1/blobs/photos/private.txt").status_code == 200, "whole bucket public")
            check(call("GET", P, token="photos-admin-0123456789").json() == {"prefixes": [""]}, "admin:photos may read it")
            check(call("GET", P, token="\(Self.readerToken)").status_code == 403, "read:* is not admin")
            check(call("GET", P, token=None).status_code == 401, "anonymous")
            check(call("GET", "/v1/admin/buckets/nosuch/public").status_code == 404, "unknown bucket")
            check(call("GET", "/v1/admin/buckets/Bad!/public").status_code == 404, "invalid bucket name")
            for body in [{"prefixes": ["a*"]}, {"prefixes": ["../x"]}, {"prefixes": "pub/"}, {"prefix": []}, {"prefixes": [1]}]:
                r = call("PUT", P, json=body); check(r.status_code == 400, f"{body}: {r.status_code}")
            check(call("PUT", P, data=b'{"prefixes": []}').status_code == 415, "not JSON")
            check(call("DELETE", P).status_code == 405, "no DELETE")
            r = call("PUT", P, json={"prefixes": []}); check(r.json() == {"prefixes": []}, "cleared")
            check(requests.get(B + "/v1/blobs/photos/pub/a.txt").status_code == 401, "closed again")
            print("ok")
            """])
        #expect(result.status == 0, "\(String(decoding: result.stdout, as: UTF8.self))\n\(result.stderr)")
    }
}

import Foundation
import LiveBlobd
import Testing

/// Per-blob Cache-Control and Content-Disposition (issue 11, point 11).
@Suite struct BlobHeaderTests {
    @Test func uploadsSetCacheControlAndContentDisposition() throws {
        let dir = TempDir()
        let dataDir = dir.path + "/data"
        var blobd = try BlobdProcess(dataDir: dataDir)
        var b = blobd.baseURL
        let put = try curl(["-X", "PUT", "-H", "Cache-Control: public, max-age=3600, immutable",
                            "-H", "Content-Disposition: attachment; filename=\"report.pdf\"",
                            "-H", "Content-Type: application/pdf", "--data-binary", "%PDF", b + "/v1/blobs/r.pdf"])
        #expect(put.status == 201)
        #expect(put.header("Cache-Control") == "no-store", "the write's own answer is not cacheable")
        #expect(put.json["cache_control"] as? String == "public, max-age=3600, immutable")
        #expect(put.json["content_disposition"] as? String == "attachment; filename=\"report.pdf\"")
        let etag = try #require(put.header("ETag"))

        for method in [["-X", "GET"], ["-I"]] {
            let response = try curl(method + [b + "/v1/blobs/r.pdf"])
            #expect(response.status == 200)
            #expect(response.header("Cache-Control") == "public, max-age=3600, immutable")
            #expect(response.header("Content-Disposition") == "attachment; filename=\"report.pdf\"")
            #expect(response.header("Content-Type") == "application/pdf")
        }
        let ranged = try curl(["-r", "0-1", b + "/v1/blobs/r.pdf"])
        #expect(ranged.status == 206)
        #expect(ranged.header("Content-Disposition") == "attachment; filename=\"report.pdf\"")
        let notModified = try curl(["-H", "If-None-Match: \(etag)", b + "/v1/blobs/r.pdf"])
        #expect(notModified.status == 304)
        #expect(notModified.header("Cache-Control") == "public, max-age=3600, immutable", "RFC 9110 §15.4.5")

        // They survive a restart, and a new version without them has none.
        #expect(blobd.stop() == 0)
        blobd = try BlobdProcess(dataDir: dataDir)
        b = blobd.baseURL
        #expect(try curl([b + "/v1/blobs/r.pdf"]).header("Content-Disposition") == "attachment; filename=\"report.pdf\"")
        #expect(try curl(["-X", "PUT", "--data-binary", "v2", b + "/v1/blobs/r.pdf"]).status == 200)
        let replaced = try curl([b + "/v1/blobs/r.pdf"])
        #expect(replaced.header("Cache-Control") == nil)
        #expect(replaced.header("Content-Disposition") == nil)

        // Content-addressed POST and tus metadata set them the same way.
        let posted = try curl(["-X", "POST", "-H", "Cache-Control: no-cache", "--data-binary", "addressed", b + "/v1/blobs"])
        let postedKey = try #require(posted.json["key"] as? String)
        #expect(try curl([b + "/v1/blobs/" + postedKey]).header("Cache-Control") == "no-cache")
        let tus = Tus(blobd: blobd)
        let location = try #require(try tus.create(length: 3, metadata: [
            "key": "via-tus", "cache-control": "private, max-age=60", "content-disposition": "inline; filename=\"a.txt\"",
        ]).header("Location"))
        #expect(try tus.patch(location, offset: 0, Array("abc".utf8)).status == 204)
        let viaTus = try curl([b + "/v1/blobs/via-tus"])
        #expect(viaTus.header("Cache-Control") == "private, max-age=60")
        #expect(viaTus.header("Content-Disposition") == "inline; filename=\"a.txt\"")

        // Content-Encoding and Expires are stored too: a gzip blob comes back labelled as one.
        #expect(try curl(["-X", "PUT", "-H", "Content-Encoding: gzip", "-H", "Expires: Wed, 02 Jan 2030 03:04:05 GMT",
                          "--data-binary", "gz", b + "/v1/blobs/z.gz"]).status == 201)
        let zipped = try curl(["-I", b + "/v1/blobs/z.gz"])
        #expect(zipped.header("Content-Encoding") == "gzip")
        #expect(zipped.header("Expires") == "Wed, 02 Jan 2030 03:04:05 GMT")

        // A value that cannot be a header field is refused before anything is stored.
        let injected = try tus.create(length: 3, metadata: ["key": "bad", "content-disposition": "inline\r\nSet-Cookie: x=1"])
        #expect(injected.status == 400)
        let nonASCII = try curl(["-X", "PUT", "-H", "Content-Disposition: attachment; filename=\"r\u{E9}sum\u{E9}.pdf\"",
                                 "--data-binary", "x", b + "/v1/blobs/bad"])
        #expect(nonASCII.status == 400)
        #expect(try curl([b + "/v1/blobs/bad"]).status == 404)
    }

    /// An index made before schema versions were recorded opens, gains the new columns, and
    /// serves its blobs unchanged.
    @Test func indexFromAnEarlierReleaseIsMigrated() throws {
        let dir = TempDir()
        let dataDir = dir.path + "/data"
        let version = "ab" + String(repeating: "0", count: 29) + "1"
        try FileManager.default.createDirectory(atPath: dataDir + "/blobs/ab", withIntermediateDirectories: true)
        _ = dir.file("data/blobs/ab/" + version, Array("old blob".utf8))
        let script = """
            import sqlite3, sys, hashlib
            c = sqlite3.connect(sys.argv[1])
            c.executescript('''
            CREATE TABLE blobs (key BLOB PRIMARY KEY, version TEXT NOT NULL, size INTEGER NOT NULL, sha256 BLOB NOT NULL,
                content_type TEXT NOT NULL, modified INTEGER NOT NULL) WITHOUT ROWID;
            CREATE TABLE uploads (id TEXT PRIMARY KEY, length INTEGER, offset INTEGER NOT NULL, hash_state BLOB NOT NULL,
                metadata TEXT NOT NULL, key BLOB, content_type TEXT NOT NULL, expires INTEGER NOT NULL, completed_key BLOB) WITHOUT ROWID;
            CREATE INDEX uploads_by_expiry ON uploads (expires);
            CREATE INDEX blobs_by_version ON blobs (version);
            CREATE TABLE garbage (version TEXT PRIMARY KEY) WITHOUT ROWID;
            ''')
            c.execute('INSERT INTO blobs VALUES (?, ?, ?, ?, ?, ?)',
                      (b'legacy', sys.argv[2], 8, hashlib.sha256(b'old blob').digest(), 'text/plain', 1700000000))
            c.commit()
            """
        let made = try run("/usr/bin/env", ["python3", "-c", script, dataDir + "/index.sqlite", version])
        #expect(made.status == 0, "\(made.stderr)")
        let blobd = try BlobdProcess(dataDir: dataDir)
        let legacy = try curl([blobd.baseURL + "/v1/blobs/legacy"])
        #expect(legacy.status == 200)
        #expect(legacy.text == "old blob")
        #expect(legacy.header("Content-Type") == "text/plain")
        #expect(legacy.header("Cache-Control") == nil)
        #expect(try curl(["-X", "PUT", "-H", "Cache-Control: max-age=5", "--data-binary", "new", blobd.baseURL + "/v1/blobs/legacy"]).status == 200)
        #expect(try curl([blobd.baseURL + "/v1/blobs/legacy"]).header("Cache-Control") == "max-age=5")
    }
}

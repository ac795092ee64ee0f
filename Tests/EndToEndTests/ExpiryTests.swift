import Foundation
import LiveBlobd
import Testing

/// Blobs that expire: `?ttl=` and tus `ttl` (Blob-Expires-At), 404 from the deadline on, the file
/// reclaimed by the sweep; unfinished uploads idle past `--upload-expiry` removed.
@Suite struct ExpiryTests {
    /// The blob files of a data directory.
    static func blobFiles(_ blobd: BlobdProcess) -> [String] {
        files(under: blobd.dataDir + "/blobs")
    }

    /// `PUT ?ttl=2s`: Blob-Expires-At two seconds on, on PUT, GET and HEAD; from then on 404
    /// everywhere (GET, HEAD, listings, DELETE), and the sweep reclaims its file. Bad values are 400.
    @Test func ttlExpiresAndIsReclaimed() throws {
        let blobd = try BlobdProcess()
        let dir = TempDir()
        let body = dir.file("b", Array("short-lived".utf8))
        let before = Int64(Date().timeIntervalSince1970)
        let put = try curl(["-X", "PUT", "--data-binary", "@" + body, blobd.baseURL + "/v1/blobs/ttt/short?ttl=2s"])
        #expect(put.status == 201)
        let expires = try #require(put.header("Blob-Expires-At").flatMap(parseHTTPDate)).timeIntervalSince1970
        #expect(Int64(expires) >= before + 2 && Int64(expires) <= Int64(Date().timeIntervalSince1970) + 2)
        #expect(try curl(["-X", "PUT", "--data-binary", "@" + body, blobd.baseURL + "/v1/blobs/ttt/kept"]).header("Blob-Expires-At") == nil)
        let get = try curl([blobd.baseURL + "/v1/blobs/ttt/short"])
        #expect(get.status == 200 && get.text == "short-lived" && get.header("Blob-Expires-At") == put.header("Blob-Expires-At"))
        #expect(try curl(["-I", blobd.baseURL + "/v1/blobs/ttt/short"]).header("Blob-Expires-At") == put.header("Blob-Expires-At"))
        #expect(Self.blobFiles(blobd).count == 2)
        for bad in ["0", "abc", "1.5s", "-3", "2w", "99999999999999d", "36501d", "", "5s&ttl=6s"] {
            let answer = try curl(["-X", "PUT", "--data-binary", "@" + body, blobd.baseURL + "/v1/blobs/ttt/bad?ttl=" + bad])
            #expect(answer.status == 400, "ttl=\(bad)")
        }
        #expect(try curl([blobd.baseURL + "/v1/blobs/ttt/bad"]).status == 404)
        while Date().timeIntervalSince1970 < expires { usleep(50_000) }
        #expect(try curl([blobd.baseURL + "/v1/blobs/ttt/short"]).status == 404)
        #expect(try curl(["-I", blobd.baseURL + "/v1/blobs/ttt/short"]).status == 404)
        #expect((try curl([blobd.baseURL + "/v1/blobs?prefix=ttt/"]).json["blobs"] as? [[String: Any]])?.map { $0["key"] as? String } == ["ttt/kept"])
        #expect(eventually(within: 10) { Self.blobFiles(blobd).count == 1 }, "the expired blob's file is reclaimed")
        #expect(try curl(["-X", "DELETE", blobd.baseURL + "/v1/blobs/ttt/short"]).status == 404)
        #expect(try curl([blobd.baseURL + "/v1/blobs/ttt/kept"]).status == 200)
        #expect(eventually(within: 5) { blobd.stderr.contains("Expired blobs removed blobs.count=1") })
    }

    /// tus metadata `ttl`: the finished blob answers Blob-Expires-At and expires; an unreadable
    /// ttl refuses the creation.
    @Test func tusTimeToLive() throws {
        let blobd = try BlobdProcess()
        let tus = Tus(blobd: blobd)
        #expect(try tus.create(length: 5, metadata: ["key": "u/bad", "ttl": "soon"]).status == 400)
        let created = try tus.create(length: 5, metadata: ["key": "uuu/tus", "ttl": "2s"])
        #expect(created.status == 201)
        let location = try #require(created.header("Location")).replacingOccurrences(of: blobd.baseURL, with: "")
        #expect(try tus.patch(location, offset: 0, Array("hello".utf8)).status == 204)
        let head = try curl(["-I", blobd.baseURL + "/v1/blobs/uuu/tus"])
        #expect(head.status == 200)
        let expires = try #require(head.header("Blob-Expires-At").flatMap(parseHTTPDate))
        #expect(abs(expires.timeIntervalSinceNow - 2) <= 1.5)
        #expect(eventually(within: 6) { (try? curl([blobd.baseURL + "/v1/blobs/uuu/tus"]).status) == 404 })
        #expect(eventually(within: 10) { Self.blobFiles(blobd).isEmpty })
    }

    /// A bootstrap file's lifecycle rules are in force from the start, as the admin API shows them.
    @Test func bootstrapLifecycle() throws {
        let dir = TempDir()
        let file = dir.file("bootstrap.json", Array(#"""
            {"buckets": [{"name": "boot", "lifecycle": {"rules": [{"id": "tmp", "status": "Enabled", "prefix": "tmp/",
             "expiration_date": "2030-01-01"}]}}],
             "keys": [{"name": "ops", "grants": ["admin:boot", "write:boot"], "token": "ops-token-1"},
                      {"name": "writer", "grants": ["write:boot"], "token": "writer-token-1"}]}
            """#.utf8))
        let blobd = try BlobdProcess(["--bootstrap", file])
        let ops = ["-H", "Authorization: Bearer ops-token-1"]
        #expect(try curl(ops + [blobd.baseURL + "/v1/admin/buckets/boot/lifecycle"]).text
                == #"{"rules":[{"id":"tmp","status":"Enabled","prefix":"tmp/","expiration_date":"2030-01-01T00:00:00Z"}]}"#)
        #expect(try curl(["-H", "Authorization: Bearer writer-token-1", blobd.baseURL + "/v1/admin/buckets/boot/lifecycle"]).status == 403)
        #expect(try curl(ops + ["-X", "PUT", "--data-binary", "x", blobd.baseURL + "/v1/blobs/boot/tmp/a"]).header("x-amz-expiration")
                == #"expiry-date="Tue, 01 Jan 2030 00:00:00 GMT", rule-id="tmp""#)
    }

    /// A multipart upload and a tus upload idle past `--upload-expiry` are removed with their
    /// files (a multipart upload no longer lives a fixed day).
    @Test func idleUploadsExpire() throws {
        let blobd = try BlobdProcess(["--s3-listen", "127.0.0.1:0", "--upload-expiry", "2s"])
        let s3 = "http://127.0.0.1:\(try #require(blobd.s3Port))"
        #expect(try curl(["-X", "PUT", s3 + "/idle"]).status == 200)
        let initiated = try curl(["-X", "POST", s3 + "/idle/big.bin?uploads"])
        let id = try #require(initiated.text.components(separatedBy: "<UploadId>").dropFirst().first?.components(separatedBy: "<").first)
        let dir = TempDir()
        #expect(try curl(["-X", "PUT", "--data-binary", "@" + dir.file("p", Array("part".utf8)),
                          s3 + "/idle/big.bin?partNumber=1&uploadId=" + id]).status == 200)
        let tus = Tus(blobd: blobd)
        let created = try tus.create(length: 10, metadata: ["key": "idle/tus"])
        let location = try #require(created.header("Location")).replacingOccurrences(of: blobd.baseURL, with: "")
        #expect(try tus.patch(location, offset: 0, Array("half".utf8)).status == 204)
        #expect(files(under: blobd.dataDir + "/uploads").count == 2)
        #expect(try curl([s3 + "/idle?uploads"]).text.contains(id))
        #expect(eventually(within: 10) { files(under: blobd.dataDir + "/uploads").isEmpty }, "\(files(under: blobd.dataDir + "/uploads"))")
        #expect(try !curl([s3 + "/idle?uploads"]).text.contains(id))
        #expect(try curl(["-X", "PUT", "--data-binary", "@" + dir.file("q", Array("late".utf8)),
                          s3 + "/idle/big.bin?partNumber=2&uploadId=" + id]).status == 404)
        #expect(try tus.head(location).status == 404)
    }
}

/// The sweep on two cluster nodes sharing one PostgreSQL index: both sweep every 2 s, one at a
/// time; every expired blob is deleted once, on one node or the other, with no error on either.
@Suite(.serialized, .enabled(if: PostgresServer.isInstalled, "PostgreSQL 15 is installed by make deps"))
struct ClusterExpiryTests {
    @Test func twoNodesSweepEachBlobOnce() throws {
        // (--upload-expiry 4s: the garbage reclaim runs with the upload sweeper, every 2 s then.)
        let cluster = try ClusterTests.Cluster(extra: ["--reclaim-grace", "1", "--upload-expiry", "4s"])
        let (a, b) = (cluster.nodes[0], cluster.nodes[1])
        let dir = TempDir()
        let body = dir.file("b", Array("x".utf8))
        for n in 0..<40 {
            let node = n % 2 == 0 ? a : b
            #expect(try curl(["-X", "PUT", "--data-binary", "@" + body, node.baseURL + "/v1/blobs/ccc/\(n)?ttl=1s"]).status == 201)
        }
        #expect(try curl(["-X", "PUT", "--data-binary", "@" + body, a.baseURL + "/v1/blobs/ccc/kept"]).status == 201)
        func removed(_ node: BlobdProcess) -> Int {
            node.stderr.components(separatedBy: "Expired blobs removed blobs.count=").dropFirst()
                .compactMap { Int($0.prefix { $0.isNumber }) }.reduce(0, +)
        }
        #expect(eventually(within: 15) { removed(a) + removed(b) == 40 }, "a: \(removed(a)), b: \(removed(b))")
        for node in [a, b] {
            #expect(try curl([node.baseURL + "/v1/blobs/ccc/7"]).status == 404)
            #expect((try curl([node.baseURL + "/v1/blobs?prefix=ccc/"]).json["blobs"] as? [[String: Any]])?.count == 1)
            #expect(!node.stderr.contains("The expiry sweep cannot read the index"), "\(node.stderr)")
        }
        // The files go after the grace period, by the cluster's reclaim.
        #expect(eventually(within: 30) { files(under: cluster.dataDir + "/blobs").count == 1 })
        usleep(2_500_000)
        #expect(removed(a) + removed(b) == 40, "no blob deleted twice")
    }
}

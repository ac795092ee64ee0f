import Foundation
import LiveBlobd
import Testing

/// `blobd migrate-index` and `blobd fsck` on a cluster: real PostgreSQL, real nodes.
@Suite(.serialized, .enabled(if: PostgresServer.isInstalled, "PostgreSQL 15 is installed by make deps"))
struct ClusterToolTests {
    /// A single node's data directory, with blobs, metadata, an S3 bucket and a half-done tus
    /// upload, moved to PostgreSQL: stopped with SIGINT midway, run again, then served by two
    /// nodes with the same bytes, ETags, digests and metadata, and the upload finished there
    /// with its Content-Language; the unfinished uploads keep their owner's places.
    @Test func migrateIndexKeepsEverything() throws {
        let postgres = try PostgresServer()
        let shared = TempDir("blobd-migrate")
        let dataDir = shared.path + "/data"
        let data = testBytes(3 * 1024 * 1024, seed: 3)
        var etags: [String: String] = [:]
        var uploadPath = ""
        var s3ETag = ""
        let summedParts = [testBytes(5 << 20, seed: 11), Array("end".utf8)]
        var summedUpload = "", summedETags: [String] = []
        do {
            let single = try BlobdProcess(["--s3-listen", "127.0.0.1:0"], dataDir: dataDir)
            try run("/usr/bin/env", ["BASE=\(single.baseURL)", "python3", "-c", """
                import os, http.client, urllib.parse
                conn = http.client.HTTPConnection(urllib.parse.urlparse(os.environ["BASE"]).netloc)
                for i in range(3000):
                    conn.request("PUT", "/v1/blobs/many/%04d" % i, body=b"blob %d" % i)
                    response = conn.getresponse(); response.read()
                    assert response.status == 201, response.status
                """])
            let put = try curl(["-X", "PUT", "--data-binary", "kept with metadata", "-H", "Content-Type: text/x-kept",
                                "-H", "Cache-Control: max-age=60", "-H", "Content-Disposition: attachment; filename=\"k.txt\"",
                                "-H", "Content-Language: de, en", single.baseURL + "/v1/blobs/meta"])
            etags["meta"] = put.header("ETag")
            etags["many/0042"] = try curl(["-I", single.baseURL + "/v1/blobs/many/0042"]).header("ETag")
            let created = try curl(["-X", "POST", "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Length: \(data.count)",
                                    "-H", "Upload-Metadata: content-language \(Data("sv".utf8).base64EncodedString())",
                                    single.baseURL + "/v1/uploads"])
            uploadPath = URL(string: created.header("Location") ?? "")?.path ?? ""
            let patched = try curl(["-X", "PATCH", "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Offset: 0",
                                    "-H", "Content-Type: application/offset+octet-stream", "--data-binary", "@-",
                                    single.baseURL + uploadPath], stdin: Array(data[..<1_000_000]))
            #expect(patched.status == 204)
            let s3 = "http://127.0.0.1:\(try #require(single.s3Port))"
            #expect(try curl(["-X", "PUT", s3 + "/bucket"]).status == 200)
            let configuration = "<CreateBucketConfiguration><LocationConstraint>eu-west-1</LocationConstraint></CreateBucketConfiguration>"
            #expect(try curl(["-X", "PUT", "--data-binary", configuration, s3 + "/europe"]).status == 200)
            s3ETag = try curl(["-X", "PUT", "--data-binary", "through s3", s3 + "/bucket/object"]).header("ETag") ?? ""
            // A multipart object, whose part sizes must travel too (GET by part number).
            let initiated = try curl(["-X", "POST", s3 + "/bucket/parts?uploads"]).text
            let uploadID = try #require(initiated.range(of: "(?<=<UploadId>)[^<]+", options: .regularExpression).map { String(initiated[$0]) })
            var completion = "<CompleteMultipartUpload>"
            for (number, body) in [testBytes(5 << 20, seed: 9), Array("tail".utf8)].enumerated() {
                let etag = try curl(["-X", "PUT", "--data-binary", "@-", s3 + "/bucket/parts?partNumber=\(number + 1)&uploadId=\(uploadID)"],
                                    stdin: body).header("ETag") ?? ""
                completion += "<Part><PartNumber>\(number + 1)</PartNumber><ETag>\(etag)</ETag></Part>"
            }
            completion += "</CompleteMultipartUpload>"
            #expect(try curl(["-X", "POST", "--data-binary", completion, s3 + "/bucket/parts?uploadId=\(uploadID)"]).status == 200)
            // An unfinished upload with a checksum algorithm and one part, finished after the move.
            let started = try curl(["-X", "POST", "-H", "x-amz-checksum-algorithm: SHA256", s3 + "/bucket/summed?uploads"]).text
            summedUpload = try #require(started.range(of: "(?<=<UploadId>)[^<]+", options: .regularExpression).map { String(started[$0]) })
            summedETags.append(try curl(["-X", "PUT", "-H", "x-amz-checksum-sha256: \(sha256Base64(summedParts[0]))", "--data-binary", "@-",
                                         s3 + "/bucket/summed?partNumber=1&uploadId=\(summedUpload)"], stdin: summedParts[0]).header("ETag") ?? "")
            #expect(single.stop() == 0)
        }

        // Stopped by SIGINT after its first progress line, then run again.
        let migration = ChildProcess()
        migration.executableURL = URL(fileURLWithPath: blobdExecutable())
        migration.arguments = ["migrate-index", "--data-dir", dataDir, "--to", postgres.url]
        migration.environment = ["BLOBD_PROGRESS_INTERVAL": "0", "BLOBD_TEST_MIGRATION_DELAY": "0.5", "PATH": "/usr/bin:/bin"]
        let errors = Pipe()
        migration.standardError = errors
        migration.standardOutput = FileHandle.nullDevice
        try migration.run()
        var seen = Data()
        while !String(decoding: seen, as: UTF8.self).contains("migrate-index: ") && migration.isRunning {
            seen.append(errors.fileHandleForReading.availableData)
        }
        kill(migration.processIdentifier, SIGINT)
        migration.waitUntilExit()
        #expect(migration.terminationStatus == 130, "stopped cleanly: \(String(decoding: seen, as: UTF8.self))")
        #expect(FileManager.default.fileExists(atPath: dataDir + "/index.sqlite"), "not retired until done")
        let again = try run(blobdExecutable(), ["migrate-index", "--data-dir", dataDir, "--to", postgres.url])
        let summary = String(decoding: again.stdout, as: UTF8.self)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(summary.contains("migrated 3003 blobs"), "\(summary)")
        #expect(!summary.contains("; 3003 new"), "the second run found the first run's work: \(summary)")
        // The two S3 buckets and the one the /v1 writes made theirs (one namespace).
        #expect(summary.contains("3 buckets, 0 bucket settings, 1 tus uploads, 1 multipart uploads, 0 pending events"), "\(summary)")

        // Without --index the directory is refused now.
        let refused = try run(blobdExecutable(), ["--data-dir", dataDir, "--listen", "127.0.0.1:0"], timeout: 30)
        #expect(refused.status != 0 && refused.stderr.contains("--index"), "\(refused.stderr)")

        // Two nodes serve it all. The two unfinished uploads moved with their owner (this
        // address), whose places under --max-open-uploads they still take.
        var cluster = try ClusterTests.Cluster(postgres: postgres, dataDirs: [dataDir, dataDir],
                                               extra: ["--s3-listen", "127.0.0.1:0", "--max-open-uploads", "2"])
        let (a, b) = (cluster.nodes[0], cluster.nodes[1])
        let refusedUpload = try curl(["-X", "POST", "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Length: 1", a.baseURL + "/v1/uploads"])
        #expect(refusedUpload.status == 429, "the moved uploads count toward their owner's limit")
        let meta = try curl([b.baseURL + "/v1/blobs/meta"])
        #expect(meta.text == "kept with metadata" && meta.header("ETag") == etags["meta"])
        #expect(meta.header("Content-Type") == "text/x-kept" && meta.header("Cache-Control") == "max-age=60")
        #expect(meta.header("Content-Disposition") == "attachment; filename=\"k.txt\"" && meta.header("Content-Language") == "de, en")
        #expect(meta.header("Repr-Digest") == "sha-256=:\(sha256Base64(Array("kept with metadata".utf8))):")
        let one = try curl([a.baseURL + "/v1/blobs/many/0042"])
        #expect(one.text == "blob 42" && one.header("ETag") == etags["many/0042"])
        let listed = try curl([a.baseURL + "/v1/blobs?prefix=many/&limit=1000"]).text
        #expect(listed.contains("many/0999") && !listed.contains("many/1000"))
        let head = try curl(["-I", "-H", "Tus-Resumable: 1.0.0", b.baseURL + uploadPath])
        #expect(head.header("Upload-Offset") == "1000000", "the unfinished upload, with its offset")
        let finished = try curl(["-X", "PATCH", "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Offset: 1000000",
                                 "-H", "Content-Type: application/offset+octet-stream", "--data-binary", "@-",
                                 b.baseURL + uploadPath], stdin: Array(data[1_000_000...]))
        #expect(finished.status == 204, "finished on a node, with the saved hash state")
        let whole = try curl([a.baseURL + "/v1/blobs/" + sha256Hex(data)])
        #expect(whole.status == 200 && sha256Hex(whole.body) == sha256Hex(data))
        #expect(whole.header("Content-Language") == "sv", "the upload's attributes moved with it")
        let placeFreed = try curl(["-X", "POST", "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Length: 1", a.baseURL + "/v1/uploads"])
        #expect(placeFreed.status == 201, "finishing the moved upload frees its place")
        let s3 = try curl(["-I", "http://127.0.0.1:\(try #require(b.s3Port))/bucket/object"])
        #expect(s3.status == 200 && s3.header("ETag") == s3ETag, "the S3 object keeps its MD5 ETag")
        let part = try curl(["http://127.0.0.1:\(try #require(a.s3Port))/bucket/parts?partNumber=2"])
        #expect(part.status == 206 && part.text == "tail" && part.header("x-amz-mp-parts-count") == "2"
                && part.header("Content-Range") == "bytes \(5 << 20)-\((5 << 20) + 3)/\((5 << 20) + 4)", "a part by number: \(part.status)")
        // The upload with a checksum goes on on a node: a part (its checksum computed), Complete,
        // and the object's composite SHA-256 from both parts'.
        let europe = try curl(["http://127.0.0.1:\(try #require(b.s3Port))/europe?location"])
        #expect(europe.text.contains(">eu-west-1</LocationConstraint>"), "a bucket keeps its region: \(europe.text)")
        let b3 = "http://127.0.0.1:\(try #require(b.s3Port))/bucket/summed"
        summedETags.append(try curl(["-X", "PUT", "--data-binary", "@-", b3 + "?partNumber=2&uploadId=\(summedUpload)"],
                                    stdin: summedParts[1]).header("ETag") ?? "")
        let list = summedETags.enumerated().map { "<Part><PartNumber>\($0.offset + 1)</PartNumber><ETag>\($0.element)</ETag></Part>" }
        let done = try curl(["-X", "POST", "--data-binary", "<CompleteMultipartUpload>\(list.joined())</CompleteMultipartUpload>",
                             b3 + "?uploadId=\(summedUpload)"])
        let raw = summedParts.flatMap { Array(Data(base64Encoded: sha256Base64($0)) ?? Data()) }
        let composite = sha256Base64(raw) + "-2"
        #expect(done.status == 200 && done.text.contains("<ChecksumSHA256>\(composite)</ChecksumSHA256>"), "\(done.text)")
        let summed = try curl(["-I", "-H", "x-amz-checksum-mode: ENABLED", b3])
        #expect(summed.header("x-amz-checksum-sha256") == composite && summed.header("x-amz-checksum-type") == "COMPOSITE")
        // PostgreSQL keeps the parts' checksums: part 2 answers its own.
        let second = try curl(["-I", "-H", "x-amz-checksum-mode: ENABLED", b3 + "?partNumber=2"])
        #expect(second.status == 206 && second.header("x-amz-checksum-sha256") == sha256Base64(summedParts[1]), "\(second.status)")
        cluster.nodes.removeAll()
    }

    /// fsck on a live cluster: a version in its grace period and a write in flight on a live
    /// node are not unindexed; the leftover of a node that is gone is, and --repair
    /// quarantines it. Progress lines go to stderr.
    @Test func fsckChecksTheSharedIndexBesideLiveNodes() throws {
        let cluster = try ClusterTests.Cluster()
        let (a, b) = (cluster.nodes[0], cluster.nodes[1])
        for i in 0..<50 {
            #expect(try curl(["-X", "PUT", "--data-binary", "v\(i)", a.baseURL + "/v1/blobs/fff/\(i)"]).status == 201)
        }
        #expect(try curl(["-X", "PUT", "--data-binary", "replaced", b.baseURL + "/v1/blobs/fff/1"]).status == 200)
        // A slow upload in flight on B while fsck runs.
        let bodyFile = cluster.shared.file("slow", testBytes(16 * 1024 * 1024, seed: 2))
        let slow = ChildProcess()
        slow.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        slow.arguments = ["-s", "-o", "/dev/null", "--limit-rate", "1M", "-T", bodyFile, b.baseURL + "/v1/blobs/slow"]
        try slow.run()
        defer { slow.waitUntilExit() }
        usleep(700_000)
        let fsck = [blobdExecutable(), "fsck", "--data-dir", cluster.dataDir, "--index", cluster.postgres.url]
        let clean = try run("/usr/bin/env", ["BLOBD_PROGRESS_INTERVAL=0"] + fsck)
        let output = String(decoding: clean.stdout, as: UTF8.self)
        #expect(clean.status == 0, "\(output) \(clean.stderr)")
        #expect(output.contains("checked 50 blobs: 0 corrupt, 0 missing, 0 unindexed"), "\(output)")
        #expect(clean.stderr.contains("fsck: 50/50 blobs"), "progress: \(clean.stderr)")

        // The leftover of node "gone": logged as pending in its folder, never committed.
        let version = "abcdef0123456789abcdef0123456789"
        try FileManager.default.createDirectory(atPath: cluster.dataDir + "/nodes/gone", withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: cluster.dataDir + "/nodes/gone/pending-0", contents: Data("\(version)\n".utf8)))
        #expect(FileManager.default.createFile(atPath: cluster.dataDir + "/blobs/ab/\(version)", contents: Data("partial".utf8)))
        let found = try run(fsck[0], Array(fsck.dropFirst()))
        #expect(found.status == 1)
        #expect(String(decoding: found.stdout, as: UTF8.self).contains("unindexed blobs/ab/\(version)"))
        #expect(try run(fsck[0], Array(fsck.dropFirst()) + ["--repair"]).status == 1)
        #expect(FileManager.default.fileExists(atPath: cluster.dataDir + "/quarantine/\(version)"))
        #expect(try run(fsck[0], Array(fsck.dropFirst())).status == 0)
        #expect(try curl([a.baseURL + "/v1/blobs/fff/1"]).text == "replaced")
    }

    /// PostgreSQL unreachable at start: blobd says so and exits non-zero (an orchestrator
    /// restarts it), without the password. Reachable: the password is in no log line, and
    /// /metrics labels every sample with the node id.
    @Test func startsOnlyWithItsDatabaseAndNeverLogsThePassword() throws {
        let shared = TempDir("blobd-start")
        let closed = try freePort()
        let started = Date()
        let refused = try run(blobdExecutable(), ["--data-dir", shared.path + "/data", "--listen", "127.0.0.1:0", "--node-id", "a",
                                                  "--index", "postgres://blobd:Sup3rSecret@127.0.0.1:\(closed)/blobd"], timeout: 60)
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("cannot reach the PostgreSQL index postgres://blobd:***@127.0.0.1:\(closed)/blobd"), "\(refused.stderr)")
        #expect(!refused.stderr.contains("Sup3rSecret"))
        #expect(Date().timeIntervalSince(started) < 30)

        let postgres = try PostgresServer()
        let url = postgres.url.replacingOccurrences(of: "blobd@", with: "blobd:Sup3rSecret@")
        let node = try BlobdProcess(["--index", url, "--node-id", "node-7"], dataDir: shared.path + "/data")
        #expect(try curl(["-X", "PUT", "--data-binary", "x", node.baseURL + "/v1/blobs/x"]).status == 201)
        let metrics = try curl([node.baseURL + "/metrics"]).text
        #expect(metrics.contains("blobd_build_info{node=\"node-7\",version="), "\(metrics.prefix(400))")
        #expect(metrics.contains("blobd_blobs_stored{node=\"node-7\"} 1"))
        let sessions = String(decoding: try postgres.psql(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'blobd' AND backend_type = 'client backend'").stdout, as: UTF8.self)
        #expect((Int(sessions.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 0, "blobd's pooled sessions, named: \(sessions)")
        #expect(node.stop() == 0)
        #expect(node.stderr.contains("postgres://blobd:***@127.0.0.1"), "the redacted URL is logged")
        #expect(!node.stderr.contains("Sup3rSecret"))
    }
}

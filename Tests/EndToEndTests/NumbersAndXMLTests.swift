import Foundation
import LiveBlobd
import Testing

/// What a hostile client found from outside (issue 20): numbers that trapped, XML that took
/// minutes, and what a repeated Complete answers. Run against the real blobd.
@Suite struct NumbersAndXMLTests {
    /// The status line of a raw exchange.
    static func status(_ response: String) -> String {
        response.components(separatedBy: "\r\n").first ?? ""
    }

    /// Both listeners still answer.
    static func expectAlive(_ blobd: BlobdProcess, s3Port: Int) throws {
        #expect(blobd.process.isRunning)
        #expect(try curl([blobd.baseURL + "/healthz"]).status == 200)
        #expect(try rawExchange(port: s3Port, Array("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8)).hasPrefix("HTTP/1.1 "))
    }

    /// Item 1, the issue's reproduction as written (24 bytes, curl --aws-sigv4): the checked
    /// `+` trapped and both listeners died. Now: 400 InvalidRequest, nothing stored, and the
    /// server goes on answering.
    @Test func awsChunkedOverflowIsA400() throws {
        let (blobd, port, dir) = try S3Tests.start()
        let sign = ["--aws-sigv4", "aws:amz:us-east-1:s3", "--user", "\(S3Tests.accessKey):\(S3Tests.secret)"]
        let unsigned = sign + ["-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD"]
        let s3 = "http://127.0.0.1:\(port)"
        #expect(try curl(unsigned + ["-X", "PUT", s3 + "/bkt"]).status == 200)
        let body = dir.file("c.bin", Array("1\r\nX\r\nffffffffffffffff\r\n".utf8))
        let response = try curl(sign + ["-X", "PUT", s3 + "/bkt/x", "-H", "x-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER",
                                        "-H", "x-amz-decoded-content-length: 10", "--data-binary", "@" + body])
        #expect(response.status == 400)
        #expect(response.text.contains("<Code>InvalidRequest</Code>"), "\(response.text)")
        try Self.expectAlive(blobd, s3Port: port)
        #expect(try curl(unsigned + [s3 + "/"]).status == 200)
        #expect(try curl(unsigned + [s3 + "/bkt/x"]).status == 404, "nothing stored")
        // The same body in the signed streaming mode, and sizes past 16 hex digits.
        for size in ["ffffffffffffffff", "10000000000000000", String(repeating: "f", count: 100), "+1", "-1"] {
            let other = dir.file("d.bin", Array("1\r\nX\r\n\(size)\r\nXX\r\n0\r\n\r\n".utf8))
            let answer = try curl(sign + ["-X", "PUT", s3 + "/bkt/y", "-H", "x-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER",
                                          "-H", "x-amz-decoded-content-length: 10", "--data-binary", "@" + other])
            #expect(answer.status == 400, "\(size): \(answer.text)")
        }
        try Self.expectAlive(blobd, s3Port: port)
    }

    /// Item 1's audit, in open access (what `make run` gives): every number a client sends,
    /// at its edges, is refused with a 4xx and never traps. A deferred tus length past 2^63-1
    /// trapped when the index saved it.
    @Test func hostileNumbersAreRefused() throws {
        let blobd = try BlobdProcess(["--s3-listen", "127.0.0.1:0"])
        let s3Port = try #require(blobd.s3Port)
        let s3 = "http://127.0.0.1:\(s3Port)"
        #expect(try curl(["-X", "PUT", s3 + "/bkt"]).status == 200)
        #expect(try curl(["-X", "PUT", "--data-binary", "0123456789", s3 + "/bkt/src"]).status == 200)
        func raw(_ port: Int, _ head: String, _ body: String = "") throws -> String {
            Self.status(try rawExchange(port: port, Array((head + "\r\nHost: x\r\nConnection: close\r\n\r\n" + body).utf8)))
        }
        // S3: sizes.
        for length in ["18446744073709551615", "9223372036854775808", "+10", "-1", String(repeating: "9", count: 40)] {
            #expect(try raw(s3Port, "PUT /bkt/n HTTP/1.1\r\nx-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER\r\n"
                            + "x-amz-decoded-content-length: \(length)\r\nContent-Length: 5", "0\r\n\r\n") == "HTTP/1.1 400 Bad Request", "\(length)")
        }
        #expect(try raw(s3Port, "PUT /bkt/n HTTP/1.1\r\nContent-Length: 18446744073709551615", "abc") == "HTTP/1.1 400 Bad Request")
        // libmicrohttpd answers a Content-Length or a chunk size past 2^64-1 itself: 413.
        #expect(try raw(s3Port, "PUT /bkt/n HTTP/1.1\r\nContent-Length: 99999999999999999999", "abc") == "HTTP/1.1 413 Content Too Large")
        // S3: counts and markers in the query.
        for query in ["/bkt?list-type=2&max-keys=99999999999999999999", "/bkt?max-keys=-1", "/bkt/src?partNumber=18446744073709551616",
                      "/bkt/src?partNumber=0", "/bkt?uploads&max-uploads=99999999999999999999", "/?max-buckets=18446744073709551616"] {
            #expect(try curl([s3 + query]).status == 400, "\(query)")
        }
        #expect(try curl([s3 + "/bkt/src?attributes", "-H", "x-amz-object-attributes: ObjectParts",
                          "-H", "x-amz-max-parts: 99999999999999999999"]).status == 400)
        let created = try curl(["-X", "POST", s3 + "/bkt/mp?uploads"]).text
        let uploadID = try #require(created.range(of: "<UploadId>").map { String(created[$0.upperBound...].prefix(32)) })
        #expect(try curl([s3 + "/bkt/mp?uploadId=\(uploadID)&max-parts=99999999999999999999"]).status == 400)
        #expect(try curl([s3 + "/bkt/mp?uploadId=\(uploadID)&part-number-marker=99999999999999999999"]).status == 200)
        for range in ["bytes=18446744073709551615-18446744073709551615", "bytes=0-18446744073709551616", "bytes=9-99999999999999999999"] {
            let copied = try curl(["-X", "PUT", "-H", "x-amz-copy-source: bkt/src", "-H", "x-amz-copy-source-range: \(range)",
                                   s3 + "/bkt/mp?partNumber=1&uploadId=\(uploadID)"])
            #expect(copied.status == 416, "\(range): \(copied.text)")
        }
        // S3 and /v1: Range.
        for (range, status) in [("bytes=0-18446744073709551616", 206), ("bytes=18446744073709551615-", 416),
                                ("bytes=-99999999999999999999", 206), ("bytes=9223372036854775808-9223372036854775809", 416)] {
            #expect(try curl(["-H", "Range: \(range)", s3 + "/bkt/src"]).status == status, "\(range)")
            #expect(try curl(["-H", "Range: \(range)", blobd.baseURL + "/v1/blobs/bkt/src"]).status == status, "\(range)")
        }
        // /v1: sizes, and chunk sizes (libmicrohttpd reads those).
        #expect(try raw(blobd.port, "PUT /v1/blobs/n HTTP/1.1\r\nContent-Length: 18446744073709551615", "abc") == "HTTP/1.1 413 Content Too Large")
        #expect(try raw(blobd.port, "PUT /v1/blobs/n HTTP/1.1\r\nContent-Length: 99999999999999999999", "abc") == "HTTP/1.1 413 Content Too Large")
        for (size, status) in [("10000000000000000", "413 Content Too Large"), (String(repeating: "f", count: 100), "413 Content Too Large"),
                               ("-1", "400 Bad Request"), ("+1", "400 Bad Request")] {
            #expect(try raw(blobd.port, "PUT /v1/blobs/n HTTP/1.1\r\nTransfer-Encoding: chunked", "1\r\nX\r\n\(size)\r\nabc") == "HTTP/1.1 " + status)
        }
        // tus: lengths and offsets.
        let tus = ["-H", "Tus-Resumable: 1.0.0"]
        for length in ["18446744073709551615", "9223372036854775808", "18446744073709551616", "+1"] {
            #expect(try curl(tus + ["-X", "POST", "-H", "Upload-Length: \(length)", blobd.baseURL + "/v1/uploads"]).status == 400)
        }
        let deferred = try curl(tus + ["-X", "POST", "-H", "Upload-Defer-Length: 1", blobd.baseURL + "/v1/uploads"])
        let location = try #require(deferred.header("Location"))
        let patch = tus + ["-X", "PATCH", "-H", "Content-Type: application/offset+octet-stream", "--data-binary", "abc"]
        for length in ["9223372036854775808", "18446744073709551615"] {
            let answer = try curl(patch + ["-H", "Upload-Offset: 0", "-H", "Upload-Length: \(length)", blobd.baseURL + location])
            #expect(answer.status == 400, "Upload-Length \(length)")
        }
        #expect(try curl(patch + ["-H", "Upload-Offset: 18446744073709551616", blobd.baseURL + location]).status == 400)
        #expect(try curl(patch + ["-H", "Upload-Offset: 0", "-H", "Upload-Length: 9223372036854775807", blobd.baseURL + location]).status == 204)
        try Self.expectAlive(blobd, s3Port: s3Port)
    }

    /// Item 4: 1 MiB of `<Part ` or `<Object ` cost about 12 minutes of a commit thread (each
    /// tag searched to the end of the body for its `>`). Now one pass, and MalformedXML.
    /// DeleteObjects takes 1,000 keys and no more; Complete takes 10,000 parts.
    @Test(.timeLimit(.minutes(2))) func xmlBodiesAreReadInOnePass() throws {
        let blobd = try BlobdProcess(["--s3-listen", "127.0.0.1:0"])
        let s3 = "http://127.0.0.1:\(try #require(blobd.s3Port))"
        let dir = TempDir()
        #expect(try curl(["-X", "PUT", s3 + "/bkt"]).status == 200)
        let created = try curl(["-X", "POST", s3 + "/bkt/mp?uploads"]).text
        let uploadID = try #require(created.range(of: "<UploadId>").map { String(created[$0.upperBound...].prefix(32)) })
        func post(_ path: String, _ body: String) throws -> CurlResponse {
            try curl(["-X", "POST", "--data-binary", "@" + dir.file("body", Array(body.utf8)), s3 + path])
        }
        for unit in ["<Part ", "<Object "] {
            let repeated = String(repeating: unit, count: (1 << 20) / unit.utf8.count)
            for (path, root) in [("/bkt/mp?uploadId=\(uploadID)", "CompleteMultipartUpload"), ("/bkt?delete", "Delete")] {
                let answer = try post(path, "<\(root)>" + repeated)
                #expect(answer.status == 400 && answer.text.contains("<Code>MalformedXML</Code>"), "\(unit) \(path): \(answer.text)")
            }
        }
        let keys = (0..<1001).map { "k\($0)" }
        for key in keys.prefix(3) { #expect(try curl(["-X", "PUT", "--data-binary", "x", s3 + "/bkt/" + key]).status == 200) }
        func deleteBody(_ keys: ArraySlice<String>) -> String {
            "<Delete><Quiet>true</Quiet>" + keys.map { "<Object><Key>\($0)</Key></Object>" }.joined() + "</Delete>"
        }
        let tooMany = try post("/bkt?delete", deleteBody(keys[...]))
        #expect(tooMany.status == 400 && tooMany.text.contains("<Code>MalformedXML</Code>"), "\(tooMany.text)")
        #expect(try curl([s3 + "/bkt/k0"]).status == 200, "nothing deleted")
        let deleted = try post("/bkt?delete", deleteBody(keys.prefix(1000)))
        #expect(deleted.status == 200)
        #expect(deleted.text.hasSuffix("<DeleteResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"></DeleteResult>"), "\(deleted.text)")
        #expect(try curl([s3 + "/bkt/k0"]).status == 404)
        // Keys with entities, CDATA and comments, fed however the body arrives.
        #expect(try curl(["-X", "PUT", "--data-binary", "x", s3 + "/bkt/a%26b%3Cc"]).status == 200)
        let escaped = try post("/bkt?delete", "<?xml version=\"1.0\"?><Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                               + "<Object><Key>a&amp;b<!-- x --><![CDATA[<c]]></Key><VersionId>null</VersionId></Object></Delete>")
        // The entry's VersionId (the null version) is named back, as S3 does.
        #expect(escaped.text.hasSuffix("<Deleted><Key>a&amp;b&lt;c</Key><VersionId>null</VersionId></Deleted></DeleteResult>"),
                "\(escaped.text)")
        #expect(try curl([s3 + "/bkt/a%26b%3Cc"]).status == 404)
        let complete = try post("/bkt/mp?uploadId=\(uploadID)", "<CompleteMultipartUpload>"
                                + String(repeating: "<Part><PartNumber>1</PartNumber><ETag>\"00000000000000000000000000000000\"</ETag></Part>", count: 10_001)
                                + "</CompleteMultipartUpload>")
        #expect(complete.status == 400 && complete.text.contains("<Code>MalformedXML</Code>"), "\(complete.text)")
    }

    /// Item 21: Complete answers ChecksumType beside the object's checksum, and a repeated
    /// Complete answers exactly what the first did, checksum included (it answered the ETag only).
    @Test func repeatedCompleteAnswersTheSame() throws {
        let (blobd, port, _) = try S3Tests.start()
        try S3Tests.python(S3Tests.client + """
            import base64, hashlib, zlib
            def b64(data): return base64.b64encode(data).decode()
            raw = []
            s3.meta.events.register("after-call.s3.CompleteMultipartUpload", lambda http_response, **kw: raw.append(http_response.content))
            s3.create_bucket(Bucket="again")
            bodies = [b"A" * (5 << 20), b"B" * 1000]
            for algorithm, kind, want in [
                    ("SHA256", "COMPOSITE", b64(hashlib.sha256(b"".join(hashlib.sha256(b).digest() for b in bodies)).digest()) + "-2"),
                    ("CRC32", "FULL_OBJECT", b64(zlib.crc32(b"".join(bodies)).to_bytes(4, "big")))]:
                key = "obj-" + algorithm
                created = s3.create_multipart_upload(Bucket="again", Key=key, ChecksumAlgorithm=algorithm, ChecksumType=kind)
                parts = []
                for n, body in enumerate(bodies, 1):
                    part = s3.upload_part(Bucket="again", Key=key, UploadId=created["UploadId"], PartNumber=n, Body=body,
                                          ChecksumAlgorithm=algorithm)
                    parts.append({"PartNumber": n, "ETag": part["ETag"], "Checksum" + algorithm: part["Checksum" + algorithm]})
                extra = {"ChecksumType": kind} if kind == "FULL_OBJECT" else {}
                raw.clear()
                first = s3.complete_multipart_upload(Bucket="again", Key=key, UploadId=created["UploadId"],
                                                     MultipartUpload={"Parts": parts}, **extra)
                second = s3.complete_multipart_upload(Bucket="again", Key=key, UploadId=created["UploadId"],
                                                      MultipartUpload={"Parts": parts}, **extra)
                etag = '"%s-2"' % hashlib.md5(b"".join(hashlib.md5(b).digest() for b in bodies)).hexdigest()
                expected = ('<?xml version="1.0" encoding="UTF-8"?>\\n<CompleteMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
                            '<Location>/again/%s</Location><Bucket>again</Bucket><Key>%s</Key><ETag>%s</ETag>'
                            '<Checksum%s>%s</Checksum%s><ChecksumType>%s</ChecksumType></CompleteMultipartUploadResult>'
                            % (key, key, etag.replace('"', "&quot;"), algorithm, want, algorithm, kind)).encode()
                check(raw == [expected, expected], "%s: %r" % (algorithm, raw))
                for done in (first, second):
                    check(done["ETag"] == etag and done["Checksum" + algorithm] == want and done["ChecksumType"] == kind,
                          "%s: %r" % (algorithm, done))
                # After a Complete the upload is gone for everything else, as in S3.
                check(code(lambda: s3.list_parts(Bucket="again", Key=key, UploadId=created["UploadId"])) == ("NoSuchUpload", 404), "ListParts")
                check(code(lambda: s3.upload_part(Bucket="again", Key=key, UploadId=created["UploadId"], PartNumber=3, Body=b"x"))
                      == ("NoSuchUpload", 404), "UploadPart")
            """, port: port, blobd: blobd)
    }
}

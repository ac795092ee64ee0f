import Foundation
import HTTPTesting
import LiveBlobd
import Testing

/// Which S3 operation a request selects (method, bucket or object, subresource), and the XML
/// error each main operation answers, in open access (signatures are in S3SignatureTests).
@Suite struct S3OperationTests {
    @Test(arguments: Mode.selected) func bucketOperations(_ mode: Mode) throws {
        let server = try TestServer(mode, ServerSettings(s3: true))
        let s3 = server.s3
        #expect(try s3.send("PUT", "/ops").status == 200, "CreateBucket")
        #expect(try s3.send("HEAD", "/ops").status == 200, "HeadBucket")
        let location = try s3.get("/ops?location")
        #expect(location.status == 200)
        #expect(location.text.contains("<LocationConstraint"), "GetBucketLocation: \(location.text)")
        #expect(try s3.get("/").text.contains("<Name>ops</Name>"), "ListBuckets")
        #expect(try s3.get("/ops?versioning").text.contains("VersioningConfiguration"), "GetBucketVersioning")
        #expect(try s3.get("/ops?uploads").text.contains("<ListMultipartUploadsResult"), "ListMultipartUploads")
        try s3.put("/ops/a/b", Array("x".utf8))
        let v1 = try s3.get("/ops?prefix=a/")
        #expect(v1.text.contains("<ListBucketResult") && v1.text.contains("<Key>a/b</Key>") && !v1.text.contains("<KeyCount>"),
                "ListObjects: \(v1.text)")
        let v2 = try s3.get("/ops?list-type=2&delimiter=/")
        #expect(v2.text.contains("<KeyCount>1</KeyCount>") && v2.text.contains("<Prefix>a/</Prefix>"), "ListObjectsV2: \(v2.text)")
        #expect(try s3.get("/ops?versions").text.contains("<ListVersionsResult"), "ListObjectVersions")
        for (subresource, code) in [("policy", "NoSuchBucketPolicy"), ("lifecycle", "NoSuchLifecycleConfiguration"),
                                    ("cors", "NoSuchCORSConfiguration"), ("tagging", "NoSuchTagSet")] {
            let answer = try s3.get("/ops?\(subresource)")
            #expect(answer.status == 404, "\(subresource)")
            #expect(answer.s3Code == code, "\(subresource)")
        }
        let notEmpty = try s3.send("DELETE", "/ops")
        #expect(notEmpty.status == 409)
        #expect(notEmpty.s3Code == "BucketNotEmpty")
        #expect(try s3.send("DELETE", "/ops/a/b").status == 204, "DeleteObject")
        #expect(try s3.send("DELETE", "/ops").status == 204, "DeleteBucket")
        let gone = try s3.send("HEAD", "/ops")
        #expect(gone.status == 404)
        #expect(gone.body.isEmpty)
    }

    @Test(arguments: Mode.selected) func objectOperations(_ mode: Mode) throws {
        let server = try TestServer(mode, ServerSettings(s3: true))
        let s3 = server.s3
        try s3.send("PUT", "/objs")
        let put = try s3.put("/objs/k", Array("hello".utf8), ["Content-Type: text/plain", "x-amz-meta-color: blue"])
        #expect(put.status == 200)
        #expect(put.header("ETag") == "\"5d41402abc4b2a76b9719d911017c592\"", "the MD5 of the body")
        let get = try s3.get("/objs/k")
        #expect(get.status == 200)
        #expect(get.body == Array("hello".utf8))
        #expect(get.header("Content-Type") == "text/plain")
        #expect(get.header("x-amz-meta-color") == "blue")
        let head = try s3.send("HEAD", "/objs/k")
        #expect(head.header("Content-Length") == "5")
        #expect(head.body.isEmpty)
        let range = try s3.get("/objs/k", ["Range: bytes=1-3"])
        #expect(range.status == 206)
        #expect(range.text == "ell")
        let copy = try s3.send("PUT", "/objs/copy", ["x-amz-copy-source: /objs/k"])
        #expect(copy.status == 200)
        #expect(copy.text.contains("<CopyObjectResult"), "CopyObject: \(copy.text)")
        #expect(try s3.get("/objs/copy").text == "hello")
        #expect(try s3.get("/objs/k?acl").text.contains("<AccessControlPolicy"), "GetObjectAcl")
        let batch = "<Delete><Object><Key>k</Key></Object><Object><Key>copy</Key></Object></Delete>"
        let deleted = try s3.send("POST", "/objs?delete", ["Content-MD5: \(md5Base64(Array(batch.utf8)))"], body: Array(batch.utf8))
        #expect(deleted.status == 200)
        #expect(deleted.text.contains("<Deleted><Key>k</Key>") && deleted.text.contains("<Deleted><Key>copy</Key>"),
                "DeleteObjects: \(deleted.text)")
        #expect(try s3.get("/objs/k").s3Code == "NoSuchKey")
    }

    @Test(arguments: Mode.selected) func multipartOperations(_ mode: Mode) throws {
        let server = try TestServer(mode, ServerSettings(s3: true))
        let s3 = server.s3
        #expect(try s3.send("PUT", "/mpu").status == 200)
        let created = try s3.send("POST", "/mpu/big?uploads")
        #expect(created.status == 200)
        let upload = try #require(element("UploadId", in: created.text))
        let part1 = testBytes(5 * 1024 * 1024, seed: 1), part2 = testBytes(1000, seed: 2)
        let etag1 = try #require(try s3.put("/mpu/big?partNumber=1&uploadId=\(upload)", part1).header("ETag"))
        let etag2 = try #require(try s3.put("/mpu/big?partNumber=2&uploadId=\(upload)", part2).header("ETag"))
        let parts = try s3.get("/mpu/big?uploadId=\(upload)")
        #expect(parts.text.contains("<ListPartsResult") && parts.text.contains("<PartNumber>2</PartNumber>"), "ListParts")
        #expect(try s3.get("/mpu?uploads").text.contains("<UploadId>\(upload)</UploadId>"), "ListMultipartUploads")
        let complete = "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\(etag1)</ETag></Part>"
            + "<Part><PartNumber>2</PartNumber><ETag>\(etag2)</ETag></Part></CompleteMultipartUpload>"
        let done = try s3.send("POST", "/mpu/big?uploadId=\(upload)", body: Array(complete.utf8))
        #expect(done.status == 200)
        #expect(done.text.contains("<CompleteMultipartUploadResult"), "CompleteMultipartUpload: \(done.text)")
        #expect(element("ETag", in: done.text)?.hasSuffix("-2&quot;") == true, "a multipart ETag: \(done.text)")
        #expect(try s3.get("/mpu/big").body == part1 + part2)
        // Completing again answers as the first time (as S3 does), and changes nothing.
        let again = try s3.send("POST", "/mpu/big?uploadId=\(upload)", body: Array(complete.utf8))
        #expect(again.status == 200)
        #expect(element("ETag", in: again.text) == element("ETag", in: done.text))
        let aborted = try s3.send("POST", "/mpu/small?uploads")
        let second = try #require(element("UploadId", in: aborted.text))
        let zero = try s3.put("/mpu/small?partNumber=0&uploadId=\(second)", [1])
        #expect(zero.status == 400, "part numbers start at 1")
        #expect(zero.s3Code == "InvalidArgument")
        #expect(try s3.send("DELETE", "/mpu/small?uploadId=\(second)").status == 204, "AbortMultipartUpload")
        let gone = try s3.put("/mpu/small?partNumber=1&uploadId=\(second)", [1])
        #expect(gone.status == 404)
        #expect(gone.s3Code == "NoSuchUpload")
        let unknown = try s3.send("POST", "/mpu/small?uploadId=\(second)", body: Array(complete.utf8))
        #expect(unknown.status == 404)
        #expect(unknown.s3Code == "NoSuchUpload")
    }

    @Test(arguments: Mode.selected) func errorCodes(_ mode: Mode) throws {
        let server = try TestServer(mode, ServerSettings(s3: true))
        let s3 = server.s3
        try s3.send("PUT", "/errs")
        try s3.put("/errs/k", Array("hello".utf8))
        let cases: [(TestRequest, Int, String)] = [
            (TestRequest("GET", "/nobucket/k"), 404, "NoSuchBucket"),
            (TestRequest("PUT", "/nobucket/k", body: [1]), 404, "NoSuchBucket"),
            (TestRequest("GET", "/errs/missing"), 404, "NoSuchKey"),
            (TestRequest("PUT", "/errs"), 409, "BucketAlreadyOwnedByYou"),
            (TestRequest("PUT", "/Bad_Bucket"), 400, "InvalidBucketName"),
            (TestRequest("GET", "/errs/k", headers: [("Range", "bytes=100-")]), 416, "InvalidRange"),
            (TestRequest("GET", "/errs/k", headers: [("If-Match", "\"nope\"")]), 412, "PreconditionFailed"),
            (TestRequest("PUT", "/errs/k", headers: [("Content-MD5", md5Base64(Array("other".utf8)))], body: Array("hello".utf8)),
             400, "BadDigest"),
            (TestRequest("PUT", "/errs/k", headers: [("Content-MD5", "nope")], body: Array("hello".utf8)), 400, "InvalidDigest"),
            (TestRequest("POST", "/errs?delete", body: Array("<Delete><Object>".utf8)), 400, "MalformedXML"),
            (TestRequest("PUT", "/errs/k?acl", body: [1]), 501, "NotImplemented"),
            (TestRequest("DELETE", "/errs/k?uploadId=nope"), 404, "NoSuchUpload"),
            (TestRequest("GET", "/errs/k?uploadId=nope"), 404, "NoSuchUpload"),
            (TestRequest("DELETE", "/nobucket"), 404, "NoSuchBucket"),
            (TestRequest("PUT", "/errs/copy", headers: [("x-amz-copy-source", "/errs/missing")]), 404, "NoSuchKey"),
            (TestRequest("PUT", "/errs/" + String(repeating: "k", count: 1025), body: [1]), 400, "KeyTooLongError"),
            (TestRequest("PUT", "/errs/bad%01key", body: [1]), 400, "InvalidArgument"),
            (TestRequest("PUT", "/errs/meta", headers: [("x-amz-meta-a", String(repeating: "v", count: 1100)),
                                                        ("x-amz-meta-b", String(repeating: "v", count: 1100))], body: [1]),
             400, "MetadataTooLarge"),
            (TestRequest("PUT", "/errs-eu", body: Array(("<CreateBucketConfiguration><LocationConstraint>eu west"
                                                         + "</LocationConstraint></CreateBucketConfiguration>").utf8)),
             400, "InvalidLocationConstraint"),
        ]
        for (request, status, code) in cases {
            let answer = try s3.send(request)
            #expect(answer.status == status, "\(request.method) \(request.target): \(answer.text)")
            #expect(answer.s3Code == code, "\(request.method) \(request.target)")
            #expect(answer.header("Content-Type") == "application/xml", "\(request.method) \(request.target)")
        }
        #expect(try s3.get("/errs/k").text == "hello", "no failed write changed it")
    }

    /// What a write asks to keep with an object that blobd does not keep is refused, never
    /// stored without it: encryption, tags, a website redirect, a storage class but STANDARD.
    @Test(arguments: Mode.selected) func unkeptObjectSettingsAreRefused(_ mode: Mode) throws {
        let server = try TestServer(mode, ServerSettings(s3: true))
        let s3 = server.s3
        try s3.send("PUT", "/kept")
        try s3.put("/kept/source", Array("hello".utf8))
        let refused: [(String, String, String, Int, String)] = [
            ("PUT", "/kept/a", "x-amz-server-side-encryption: AES256", 501, "NotImplemented"),
            ("PUT", "/kept/a", "x-amz-server-side-encryption-customer-algorithm: AES256", 501, "NotImplemented"),
            ("PUT", "/kept/a", "x-amz-tagging: team=blue", 501, "NotImplemented"),
            ("PUT", "/kept/a", "x-amz-website-redirect-location: /b", 501, "NotImplemented"),
            ("PUT", "/kept/a", "x-amz-storage-class: GLACIER", 501, "NotImplemented"),
            ("PUT", "/kept/a", "x-amz-storage-class: COLD", 400, "InvalidStorageClass"),
            ("POST", "/kept/a?uploads", "x-amz-server-side-encryption: aws:kms", 501, "NotImplemented"),
            ("PUT", "/kept/a", "x-amz-copy-source-server-side-encryption-customer-algorithm: AES256", 501, "NotImplemented"),
        ]
        for (method, target, field, status, code) in refused {
            let copy = field.hasPrefix("x-amz-copy-source") ? ["x-amz-copy-source: /kept/source"] : []
            let answer = try s3.send(method, target, [field] + copy, body: method == "PUT" && copy.isEmpty ? [1] : [])
            #expect(answer.status == status, "\(field): \(answer.text)")
            #expect(answer.s3Code == code, "\(field)")
        }
        #expect(try s3.get("/kept/a").status == 404, "nothing was stored")
        #expect(try s3.put("/kept/a", [1], ["x-amz-storage-class: STANDARD"]).status == 200)
        // Subresources blobd has no such setting for: setting one is refused, never taken as
        // a bucket or object write; reading accelerate or requestPayment answers S3's default.
        for (method, target) in [("PUT", "/kept?accelerate"), ("PUT", "/kept?requestPayment"), ("PUT", "/kept?ownershipControls"),
                                 ("DELETE", "/kept?publicAccessBlock"), ("GET", "/kept?inventory"), ("POST", "/kept/a?restore"),
                                 ("POST", "/kept/a?select&select-type=2"), ("PUT", "/kept/a?restore")] {
            let answer = try s3.send(method, target, [], body: method == "GET" || method == "DELETE" ? [] : Array("<x/>".utf8))
            #expect(answer.status == 501, "\(method) \(target): \(answer.text)")
            #expect(answer.s3Code == "NotImplemented", "\(method) \(target)")
        }
        #expect(try s3.get("/kept/a").body == [1], "no refused request changed the object")
        #expect(try s3.get("/kept?accelerate").text.contains("<AccelerateConfiguration"))
        #expect(try s3.get("/kept?requestPayment").text.contains("<Payer>BucketOwner</Payer>"))
    }
}

/// The text of the first `<name>` element.
func element(_ name: String, in text: String) -> String? {
    guard let start = text.range(of: "<\(name)>"), let end = text.range(of: "</\(name)>", range: start.upperBound..<text.endIndex)
    else { return nil }
    return String(text[start.upperBound..<end.lowerBound])
}

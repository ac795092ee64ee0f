import Foundation
import HTTPTesting
import LiveBlobd
import Testing

/// `GET /v1/buckets`, `PUT|DELETE /v1/buckets/NAME` (issue 35, item 14): the buckets of every
/// dialect, so one made through /v1 is an S3 bucket, and S3's are listed here.
@Suite struct V1BucketTests {
    static let json = "Content-Type: application/json"

    /// `created` of a bucket JSON answer, checked to be RFC 3339 UTC with whole seconds and
    /// within a minute of now.
    func created(_ response: TestResponse, sourceLocation: SourceLocation = #_sourceLocation) -> String {
        let text = response.json["created"] as? String ?? ""
        let format = ISO8601DateFormatter()
        let date = format.date(from: text)
        #expect(text.count == 20 && text.hasSuffix("Z"), "created: \(response.text)", sourceLocation: sourceLocation)
        #expect(date.map { abs($0.timeIntervalSinceNow) < 60 } == true, "created: \(response.text)", sourceLocation: sourceLocation)
        return text
    }

    func expectProblem(_ response: TestResponse, _ status: Int, _ detail: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(response.status == status, "\(response.text)", sourceLocation: sourceLocation)
        #expect(response.header("Content-Type") == "application/problem+json", sourceLocation: sourceLocation)
        #expect(response.json["status"] as? Int == status, sourceLocation: sourceLocation)
        #expect(response.json["detail"] as? String == detail, sourceLocation: sourceLocation)
    }

    static func invalidName(_ name: String) -> String {
        "\"\(name)\" is not a valid bucket name. A bucket name is 3 to 63 lowercase letters, digits, dots and hyphens, starting and "
            + "ending with a letter or digit (S3's rules, which every dialect of blobd applies); no \"..\", \".-\" or \"-.\", not an "
            + "IPv4 address, and none of the prefixes and suffixes AWS reserves (xn--, sthree-, -s3alias, ...)."
    }

    @Test(arguments: Mode.selected) func bucketsAreS3Buckets(_ mode: Mode) throws {
        let server = try TestServer(mode, ServerSettings(s3: true))
        let (v1, s3) = (server.v1, server.s3)
        let empty = try v1.get("/v1/buckets")
        #expect(empty.status == 200)
        #expect(empty.header("Content-Type") == "application/json")
        #expect(empty.header("Cache-Control") == "no-store")
        #expect(empty.text == #"{"buckets":[]}"#)

        let made = try v1.send("PUT", "/v1/buckets/photos")
        #expect(made.status == 201)
        #expect(made.header("Location") == "/v1/buckets/photos")
        #expect(made.header("Cache-Control") == "no-store")
        let when = created(made)
        #expect(made.text == #"{"name":"photos","created":"\#(when)"}"#)
        let again = try v1.send("PUT", "/v1/buckets/photos")
        #expect(again.status == 200)
        #expect(again.header("Location") == nil)
        #expect(again.text == made.text, "the bucket as it was made")

        // S3 sees it: HeadBucket, ListBuckets, ListObjectsV2 (no NoSuchBucket).
        #expect(try s3.send("HEAD", "/photos").status == 200)
        let listed = try s3.get("/")
        #expect(listed.text.contains("<Bucket><Name>photos</Name><CreationDate>\(when.dropLast()).000Z</CreationDate>"), "\(listed.text)")
        let objects = try s3.get("/photos?list-type=2")
        #expect(objects.status == 200)
        #expect(objects.text.contains("<KeyCount>0</KeyCount>"), "\(objects.text)")
        // And /v1 sees S3's.
        #expect(try s3.send("PUT", "/from-s3").status == 200)
        let both = try v1.get("/v1/buckets")
        let names = (both.json["buckets"] as? [[String: Any]])?.map { $0["name"] as? String ?? "" }
        #expect(names == ["from-s3", "photos"])
        #expect(both.text.hasSuffix(#"{"name":"photos","created":"\#(when)"}]}"#), "\(both.text)")

        for name in ["Bad_Name", "ab", "192.168.0.1", "a..b", "xn--abc", "-dash", String(repeating: "a", count: 64)] {
            expectProblem(try v1.send("PUT", "/v1/buckets/\(name)"), 400, Self.invalidName(name))
        }
        #expect((try v1.get("/v1/buckets").json["buckets"] as? [Any])?.count == 2, "no invalid bucket made")

        #expect(try v1.put("/v1/blobs/photos/a.txt", Array("a".utf8)).status == 201)
        expectProblem(try v1.send("DELETE", "/v1/buckets/photos"), 409, "The bucket still holds objects.")
        #expect(try v1.send("DELETE", "/v1/blobs/photos/a.txt").status == 204)
        let removed = try v1.send("DELETE", "/v1/buckets/photos")
        #expect(removed.status == 204)
        #expect(removed.header("Cache-Control") == "no-store")
        #expect(removed.body.isEmpty)
        #expect(try s3.send("HEAD", "/photos").status == 404, "S3 sees it gone")
        expectProblem(try v1.send("DELETE", "/v1/buckets/photos"), 404, "No bucket of this name.")
        expectProblem(try v1.send("DELETE", "/v1/buckets/Bad!"), 404, "No bucket of this name.")

        let post = try v1.send("POST", "/v1/buckets/photos")
        #expect(post.status == 405)
        #expect(post.header("Allow") == "PUT, DELETE")
        #expect(try v1.send("DELETE", "/v1/buckets").header("Allow") == "GET")
    }

    @Test(arguments: Mode.selected) func bucketSettings(_ mode: Mode) throws {
        let server = try TestServer(mode, ServerSettings(s3: true))
        let (v1, s3) = (server.v1, server.s3)
        let kept = try v1.send("PUT", "/v1/buckets/kept", [Self.json], body: Array(#"{"versioning": "Enabled"}"#.utf8))
        #expect(kept.status == 201)
        #expect(kept.text == #"{"name":"kept","created":"\#(created(kept))","versioning":"Enabled"}"#)
        #expect(try s3.get("/kept?versioning").text.contains("<Status>Enabled</Status>"))
        try v1.put("/v1/blobs/kept/k", Array("one".utf8))
        try v1.put("/v1/blobs/kept/k", Array("two".utf8))
        #expect((try v1.get("/v1/blobs/kept/k?versions").json["versions"] as? [Any])?.count == 2, "versions kept")

        let locked = try v1.send("PUT", "/v1/buckets/locked", [Self.json], body: Array(#"{"object_lock": true}"#.utf8))
        #expect(locked.status == 201)
        #expect(locked.text == #"{"name":"locked","created":"\#(created(locked))","versioning":"Enabled","object_lock":true}"#)
        #expect(try s3.get("/locked?object-lock").text.contains("<ObjectLockEnabled>Enabled</ObjectLockEnabled>"))
        let suspended = try v1.send("PUT", "/v1/buckets/paused", [Self.json], body: Array(#"{"versioning": "Suspended"}"#.utf8))
        #expect(suspended.json["versioning"] as? String == "Suspended")
        #expect(try s3.get("/paused?versioning").text.contains("<Status>Suspended</Status>"))

        #expect(try v1.send("PUT", "/v1/buckets/kept", [Self.json], body: Array(#"{"versioning": "Enabled"}"#.utf8)).status == 200)
        #expect(try v1.send("PUT", "/v1/buckets/locked", [Self.json], body: Array(#"{"object_lock": true}"#.utf8)).status == 200)
        expectProblem(try v1.send("PUT", "/v1/buckets/kept", [Self.json], body: Array(#"{"versioning": "Suspended"}"#.utf8)), 409,
                      "Bucket kept exists with other settings (versioning enabled, Object Lock off); a PUT does not change them: "
                      + "use S3's PutBucketVersioning.")
        expectProblem(try v1.send("PUT", "/v1/buckets/kept", [Self.json], body: Array(#"{"object_lock": true}"#.utf8)), 409,
                      "Bucket kept exists with other settings (versioning enabled, Object Lock off); a PUT does not change them: "
                      + "use S3's PutBucketVersioning.")
        let bad: [(String, String)] = [
            (#"{"versioning": "On"}"#, #""versioning" is "Enabled" or "Suspended"."#),
            (#"{"object_lock": 1}"#, #""object_lock" is true or false."#),
            (#"{"region": "eu"}"#, #"Unknown member "region": the body is {"versioning": "Enabled"|"Suspended", "object_lock": true}."#),
            (#"{"object_lock": true, "versioning": "Suspended"}"#,
             #"A bucket with Object Lock keeps versioning enabled: "versioning": "Suspended" does not go with it."#),
            ("[]", "The body must be a JSON object."),
        ]
        for (body, detail) in bad {
            expectProblem(try v1.send("PUT", "/v1/buckets/fresh", [Self.json], body: Array(body.utf8)), 400, detail)
        }
        let notJSON = try v1.send("PUT", "/v1/buckets/fresh", ["Content-Type: text/plain"], body: Array("{}".utf8))
        expectProblem(notJSON, 415, "Send the request as application/json.")
        #expect(try s3.send("HEAD", "/fresh").status == 404, "no refused PUT made it")
        let plain = try v1.send("PUT", "/v1/buckets/fresh", [Self.json], body: Array("{}".utf8))
        #expect(plain.text == #"{"name":"fresh","created":"\#(created(plain))"}"#)
    }

    @Test(arguments: Mode.selected) func bucketGrants(_ mode: Mode) throws {
        let tokens = "admin admin:*,read:*,write:*,delete:*\nowner write:photos,read:photos,delete:photos\n"
            + "reader read:photos/pub*\nother read:docs\n"
        let server = try TestServer(mode, ServerSettings(tokens: tokens, s3: true))
        let v1 = server.v1
        func send(_ method: String, _ path: String, _ token: String?, body: String = "") throws -> TestResponse {
            let fields = (token.map { ["Authorization: Bearer \($0)"] } ?? []) + (body.isEmpty ? [] : [Self.json])
            return try v1.send(method, path, fields, body: Array(body.utf8))
        }
        func names(_ token: String) throws -> [String]? {
            (try send("GET", "/v1/buckets", token).json["buckets"] as? [[String: Any]])?.map { $0["name"] as? String ?? "" }
        }
        for name in ["photos", "docs", "music"] { #expect(try send("PUT", "/v1/buckets/\(name)", "admin").status == 201) }
        #expect(try names("admin") == ["docs", "music", "photos"])
        #expect(try names("owner") == ["photos"])
        #expect(try names("reader") == ["photos"], "a grant on a prefix of the bucket touches it")
        #expect(try names("other") == ["docs"])
        #expect(try send("GET", "/v1/buckets", nil).status == 401)

        #expect(try send("PUT", "/v1/buckets/photos", "owner").status == 200)
        #expect(try send("PUT", "/v1/buckets/photos2", "owner").status == 403, "write on photos is not write on photos2")
        #expect(try send("PUT", "/v1/buckets/docs", "other").status == 403, "read is not write")
        #expect(try send("PUT", "/v1/buckets/photos", "reader").status == 403)
        expectProblem(try send("PUT", "/v1/buckets/Bad_Name", "owner"), 400, Self.invalidName("Bad_Name"))
        #expect(try send("PUT", "/v1/buckets/newone", nil).status == 401)
        #expect(try send("DELETE", "/v1/buckets/photos", "reader").status == 403)
        #expect(try send("DELETE", "/v1/buckets/docs", "owner").status == 403)
        #expect(try send("DELETE", "/v1/buckets/photos", "owner").status == 204)
        // Versioning needs admin on the bucket: refused, and nothing made.
        let versioned = try send("PUT", "/v1/buckets/photos", "owner", body: #"{"versioning": "Enabled"}"#)
        #expect(versioned.status == 403)
        #expect(versioned.json["detail"] as? String == "The token's grants do not allow this: it needs admin on every key of photos.")
        #expect(try names("admin") == ["docs", "music"])
        #expect(try send("PUT", "/v1/buckets/photos", "owner", body: #"{"object_lock": false}"#).status == 201)
        #expect(try send("PUT", "/v1/buckets/music", "admin", body: #"{"versioning": "Enabled"}"#).status == 409)
    }
}

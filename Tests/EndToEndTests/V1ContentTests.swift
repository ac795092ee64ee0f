import Foundation
import LiveBlobd
import Testing

/// Issue 20, /v1: content-addressed keys cannot be poisoned (item 6), content types are guessed
/// from the key (item 15), folders, metadata and Content-MD5 (item 19).
@Suite struct V1ContentTests {
    /// A PUT at a 64-hex key of other bytes is refused, so the POST of the document stores it.
    @Test func contentAddressedKeyCannotBePoisoned() throws {
        let blobd = try BlobdProcess()
        let document = Array("the future document".utf8)
        let address = sha256Hex(document)
        let poison = try curl(["-X", "PUT", "--data-binary", "attacker's bytes", blobd.baseURL + "/v1/blobs/" + address])
        #expect(poison.status == 400)
        #expect(poison.header("Content-Type") == "application/problem+json")
        #expect(poison.json["type"] as? String == "https://blobd.dev/problems/key-digest-mismatch")
        #expect(try curl([blobd.baseURL + "/v1/blobs/" + address]).status == 404)
        // Upper-case hex digits name the same digest.
        #expect(try curl(["-X", "PUT", "--data-binary", "other", blobd.baseURL + "/v1/blobs/" + address.uppercased()]).status == 400)

        let post = try curl(["-X", "POST", "--data-binary", "the future document", blobd.baseURL + "/v1/blobs"])
        #expect(post.status == 201)
        #expect(post.json["key"] as? String == address)
        #expect(try curl([blobd.baseURL + "/v1/blobs/" + address]).body == document)

        // The right bytes may be PUT at their own digest; other keys are not affected.
        let honest = Array("honest".utf8)
        #expect(try curl(["-X", "PUT", "--data-binary", "honest", blobd.baseURL + "/v1/blobs/" + sha256Hex(honest)]).status == 201)
        #expect(try curl(["-X", "PUT", "--data-binary", "x", blobd.baseURL + "/v1/blobs/dir/" + address]).status == 201)
        #expect(try curl(["-X", "PUT", "--data-binary", "x", blobd.baseURL + "/v1/blobs/" + address.dropLast()]).status == 201)
    }

    /// A tus upload that names a 64-hex key is refused at its last byte if the bytes differ.
    @Test func tusUploadCannotPoisonAContentAddressedKey() throws {
        let blobd = try BlobdProcess()
        let tus = Tus(blobd: blobd)
        let address = sha256Hex(Array("good".utf8))
        let created = try tus.create(length: 4, metadata: ["key": address])
        #expect(created.status == 201)
        let location = try #require(created.header("Location"))
        let patch = try tus.patch(location, offset: 0, Array("evil".utf8))
        #expect(patch.status == 400)
        #expect(patch.json["type"] as? String == "https://blobd.dev/problems/key-digest-mismatch")
        #expect(try curl([blobd.baseURL + "/v1/blobs/" + address]).status == 404)
    }

    /// A record poisoned before the check existed is replaced by the POST of its real bytes,
    /// not answered 200 as if they were stored.
    @Test func postReplacesARecordPoisonedEarlier() throws {
        let data = TempDir("blobd-poisoned")
        let document = Array("document".utf8)
        let address = sha256Hex(document)
        var blobd = try BlobdProcess(dataDir: data.path)
        #expect(try curl(["-X", "PUT", "--data-binary", "evil", blobd.baseURL + "/v1/blobs/plain"]).status == 201)
        #expect(blobd.stop() == 0)
        // What a PUT at the address stored before this fix: another body under it.
        let renamed = try run("/usr/bin/sqlite3", [data.path + "/index.sqlite",
                                                   "UPDATE blobs SET key = CAST('\(address)' AS BLOB) WHERE key = CAST('plain' AS BLOB)"])
        #expect(renamed.status == 0, "\(renamed.stderr)")
        blobd = try BlobdProcess(dataDir: data.path)
        #expect(try curl([blobd.baseURL + "/v1/blobs/" + address]).text == "evil")

        let post = try curl(["-X", "POST", "--data-binary", "document", blobd.baseURL + "/v1/blobs"])
        #expect(post.status == 200, "an existing key replaced")
        #expect(post.json["sha256"] as? String == address)
        let get = try curl([blobd.baseURL + "/v1/blobs/" + address])
        #expect(get.body == document)
        // Stored as it should be: a second POST deduplicates.
        let again = try curl(["-X", "POST", "--data-binary", "document", blobd.baseURL + "/v1/blobs"])
        #expect(again.status == 200)
        #expect(again.header("ETag") == get.header("ETag"))
    }

    /// No Content-Type, or curl's form default, gets the type of the key's extension.
    @Test func contentTypeIsGuessedFromTheKey() throws {
        let blobd = try BlobdProcess(["--s3-listen", "127.0.0.1:0"])
        let cases: [(key: String, arguments: [String], expected: String)] = [
            ("photo.jpg", ["--data-binary", "jpeg"], "image/jpeg"),            // curl's form default
            ("dir/Page.HTML", ["-H", "Content-Type:", "--data-binary", "x"], "text/html"),  // none
            ("notes.txt", ["-T", "-"], "text/plain"),                          // -T sends none
            ("data.bin", ["--data-binary", "x"], "application/octet-stream"),
            ("no-extension", ["--data-binary", "x"], "application/octet-stream"),
            ("trailing.", ["--data-binary", "x"], "application/octet-stream"),
            ("form.jpg", ["-H", "Content-Type: application/x-www-form-urlencoded; charset=utf-8", "--data-binary", "x"], "image/jpeg"),
            ("sent.jpg", ["-H", "Content-Type: text/x-mine", "--data-binary", "x"], "text/x-mine"),
        ]
        for (key, arguments, expected) in cases {
            let put = try curl(["-X", "PUT"] + arguments + [blobd.baseURL + "/v1/blobs/" + key], stdin: Array("x".utf8))
            #expect(put.status == 201, "\(key)")
            #expect(put.json["content_type"] as? String == expected, "\(key)")
            #expect(try curl(["-I", blobd.baseURL + "/v1/blobs/" + key]).header("Content-Type") == expected, "\(key)")
        }
        let post = try curl(["-X", "POST", "--data-binary", "posted", blobd.baseURL + "/v1/blobs"])
        #expect(post.json["content_type"] as? String == "application/octet-stream")

        // tus: from the key, or the file name tus-js-client sends with an empty filetype.
        let tus = Tus(blobd: blobd)
        let named = try tus.create(length: 0, metadata: ["key": "tus/clip.mp4"])
        #expect(named.status == 201)
        #expect(try curl(["-I", blobd.baseURL + "/v1/blobs/tus/clip.mp4"]).header("Content-Type") == "video/mp4")
        _ = try tus.create(length: 0, metadata: ["key": "tus/file", "filename": "doc.pdf", "filetype": ""])
        #expect(try curl(["-I", blobd.baseURL + "/v1/blobs/tus/file"]).header("Content-Type") == "application/pdf")

        // S3, unsigned in open access: PutObject without a type, and with curl's form default.
        let s3 = "http://127.0.0.1:\(try #require(blobd.s3Port))"
        #expect(try curl(["-X", "PUT", s3 + "/bucket"]).status == 200)
        #expect(try curl(["-X", "PUT", "-T", "-", s3 + "/bucket/a.png"], stdin: Array("png".utf8)).status == 200)
        #expect(try curl(["-X", "PUT", "--data-binary", "css", s3 + "/bucket/b.css"]).status == 200)
        #expect(try curl(["-I", s3 + "/bucket/a.png"]).header("Content-Type") == "image/png")
        #expect(try curl(["-I", s3 + "/bucket/b.css"]).header("Content-Type") == "text/css")
    }

    /// `delimiter=/` lists folders in `prefixes`, each once across pages of any size; a GET of
    /// `/v1/blobs/photos/` lists that folder.
    @Test func foldersAsS3ListsThem() throws {
        let blobd = try BlobdProcess()
        let keys = ["a", "photos/2019/x.jpg", "photos/2019/y.jpg", "photos/2020/z.jpg", "photos/cover.jpg",
                    "photos/readme", "photos0", "qqq/1", "qqq/2", "z"]
        for key in keys {
            #expect(try curl(["-X", "PUT", "--data-binary", "x", blobd.baseURL + "/v1/blobs/" + key]).status == 201)
        }
        func names(_ json: [String: Any]) -> [String] {
            ((json["blobs"] as? [[String: Any]]) ?? []).compactMap { $0["key"] as? String }
        }
        let top = try curl([blobd.baseURL + "/v1/blobs?delimiter=%2F"])
        #expect(top.status == 200)
        #expect(names(top.json) == ["a", "photos0", "z"])
        #expect(top.json["prefixes"] as? [String] == ["photos/", "qqq/"])
        #expect(top.json["next"] is NSNull)
        #expect(try curl([blobd.baseURL + "/v1/blobs"]).json["prefixes"] == nil, "no prefixes without a delimiter")

        let folder = try curl([blobd.baseURL + "/v1/blobs?prefix=photos%2F&delimiter=%2F"])
        #expect(names(folder.json) == ["photos/cover.jpg", "photos/readme"])
        #expect(folder.json["prefixes"] as? [String] == ["photos/2019/", "photos/2020/"])
        let slash = try curl([blobd.baseURL + "/v1/blobs/photos/"])
        #expect(slash.status == 200)
        #expect(slash.header("Content-Type") == "application/json")
        #expect(slash.body == folder.body)
        #expect(try curl([blobd.baseURL + "/v1/blobs/"]).body == top.body)
        #expect(try curl([blobd.baseURL + "/v1/blobs/photos/2019/"]).json["prefixes"] as? [String] == [])
        #expect(try curl(["-I", blobd.baseURL + "/v1/blobs/photos/"]).status == 200)
        #expect(try curl([blobd.baseURL + "/v1/blobs/photos//"]).status == 400)
        #expect(try curl(["-X", "PUT", "--data-binary", "x", blobd.baseURL + "/v1/blobs/photos/"]).status == 400)

        // Pages of every size walk the same entries, each once.
        let every = ["a", "photos/", "photos0", "qqq/", "z"]
        for limit in 1...5 {
            var seen: [String] = []
            var after: String?
            var pages = 0
            repeat {
                var url = blobd.baseURL + "/v1/blobs?delimiter=%2F&limit=\(limit)"
                if let after { url += "&after=" + (after.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? after) }
                let page = try curl([url])
                let entries = names(page.json) + ((page.json["prefixes"] as? [String]) ?? [])
                #expect(entries.count <= limit)
                seen += entries
                after = page.json["next"] as? String
                if let after { #expect(entries.contains(after)) }
                pages += 1
            } while after != nil && pages < 10
            #expect(seen.sorted() == every, "limit \(limit)")
        }
        // A folder's page resumes after the folder.
        let resumed = try curl([blobd.baseURL + "/v1/blobs/photos/?limit=1&after=photos%2F2019%2F"])
        #expect(resumed.json["prefixes"] as? [String] == ["photos/2020/"])
        #expect(resumed.json["next"] as? String == "photos/2020/")
        // Any other cursor is a key, as S3's start-after: the rest of its folder is listed.
        let fromKey = try curl([blobd.baseURL + "/v1/blobs/photos/?after=photos%2F2019%2Fx.jpg"])
        #expect(fromKey.json["prefixes"] as? [String] == ["photos/2019/", "photos/2020/"])
        #expect(names(fromKey.json) == ["photos/cover.jpg", "photos/readme"])
    }

    /// Blob-Meta-* is stored as S3 stores x-amz-meta-*, and each dialect reads the other's.
    @Test func metadataSharedWithS3() throws {
        let blobd = try BlobdProcess(["--s3-listen", "127.0.0.1:0"])
        let s3 = "http://127.0.0.1:\(try #require(blobd.s3Port))"
        #expect(try curl(["-X", "PUT", s3 + "/shared"]).status == 200)
        let put = try curl(["-X", "PUT", "-H", "Blob-Meta-Camera: Nikon Z6", "-H", "blob-meta-taken-at: 2024", "--data-binary", "x",
                            blobd.baseURL + "/v1/blobs/shared/v1.jpg"])
        #expect(put.status == 201)
        let get = try curl([blobd.baseURL + "/v1/blobs/shared/v1.jpg"])
        #expect(get.headers.filter { $0.name.hasPrefix("Blob-Meta-") }.map { "\($0.name): \($0.value)" }
                == ["Blob-Meta-Camera: Nikon Z6", "Blob-Meta-Taken-At: 2024"])
        let fromS3 = try curl(["-I", s3 + "/shared/v1.jpg"])
        #expect(fromS3.header("x-amz-meta-camera") == "Nikon Z6")
        #expect(fromS3.header("x-amz-meta-taken-at") == "2024")

        #expect(try curl(["-X", "PUT", "-H", "x-amz-meta-foo: bar", "--data-binary", "y", s3 + "/shared/s3.bin"]).status == 200)
        #expect(try curl(["-I", blobd.baseURL + "/v1/blobs/shared/s3.bin"]).header("Blob-Meta-Foo") == "bar")

        // S3's 2 KB for names and values together.
        let fits = String(repeating: "v", count: 2048 - 3)
        #expect(try curl(["-X", "PUT", "-H", "Blob-Meta-Big: \(fits)", "--data-binary", "x", blobd.baseURL + "/v1/blobs/fits"]).status == 201)
        let tooLarge = try curl(["-X", "PUT", "-H", "Blob-Meta-Big: \(fits)", "-H", "Blob-Meta-A: b", "--data-binary", "x",
                                 blobd.baseURL + "/v1/blobs/too-large"])
        #expect(tooLarge.status == 400)
        #expect(tooLarge.header("Content-Type") == "application/problem+json")
    }

    /// A Content-MD5 that the body does not match is refused, as S3's BadDigest; a malformed one
    /// as S3's InvalidDigest.
    @Test func contentMD5IsChecked() throws {
        let blobd = try BlobdProcess()
        let body = "checked body"
        let md5 = md5Base64(Array(body.utf8))
        let good = try curl(["-X", "PUT", "-H", "Content-MD5: \(md5)", "--data-binary", body, blobd.baseURL + "/v1/blobs/md5"])
        #expect(good.status == 201)
        let wrong = md5Base64(Array("other".utf8))
        for method in ["PUT", "POST"] {
            let url = blobd.baseURL + (method == "PUT" ? "/v1/blobs/md5" : "/v1/blobs")
            let bad = try curl(["-X", method, "-H", "Content-MD5: \(wrong)", "--data-binary", "tampered", url])
            #expect(bad.status == 400, "\(method)")
            #expect(bad.json["type"] as? String == "https://blobd.dev/problems/digest-mismatch", "\(method)")
        }
        #expect(try curl([blobd.baseURL + "/v1/blobs/md5"]).text == body, "nothing was stored")
        #expect(try curl([blobd.baseURL + "/v1/blobs/" + sha256Hex(Array("tampered".utf8))]).status == 404)
        for malformed in ["abc", "AAAA", Data(repeating: 0, count: 15).base64EncodedString()] {
            let response = try curl(["-X", "PUT", "-H", "Content-MD5: \(malformed)", "--data-binary", body, blobd.baseURL + "/v1/blobs/md5"])
            #expect(response.status == 400, "\(malformed)")
        }
        // A large body (hashed on the second thread) is checked too.
        let dir = TempDir()
        let large = testBytes(3 << 20)
        let file = dir.file("large", large)
        let largeMD5 = md5Base64(large)
        #expect(try curl(["-X", "PUT", "-H", "Content-MD5: \(largeMD5)", "--data-binary", "@" + file, blobd.baseURL + "/v1/blobs/large"]).status == 201)
        #expect(try curl(["-X", "PUT", "-H", "Content-MD5: \(wrong)", "--data-binary", "@" + file, blobd.baseURL + "/v1/blobs/large2"]).status == 400)
    }
}

/// MD5 (base64, as Content-MD5 carries it) through openssl, independent of blobd's.
func md5Base64(_ bytes: [UInt8]) -> String {
    let result = try? run("/usr/bin/openssl", ["dgst", "-md5", "-binary"], stdin: bytes)
    return Data(result?.stdout ?? []).base64EncodedString()
}

import Foundation
import LiveBlobd
import Testing

@Suite struct ListingTests {
    @Test func paginatesInBytewiseOrder() throws {
        let blobd = try BlobdProcess()
        var keys = (0..<25).map { String(format: "page/%02d", $0) } + ["other/x", "é", "Z"]
        for key in keys {
            let encoded = key.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? key
            #expect(try curl(["-X", "PUT", "--data-binary", key, blobd.baseURL + "/v1/blobs/" + encoded]).status == 201)
        }
        keys.sort { $0.utf8.lexicographicallyPrecedes($1.utf8) }

        let all = try curl([blobd.baseURL + "/v1/blobs"])
        #expect(all.status == 200)
        #expect(all.header("Content-Type") == "application/json")
        let blobs = try #require(all.json["blobs"] as? [[String: Any]])
        #expect(blobs.compactMap { $0["key"] as? String } == keys)
        #expect(all.json["next"] is NSNull)
        let first = try #require(blobs.first)
        #expect(Set(first.keys) == ["key", "size", "sha256", "etag", "content_type", "modified"])

        var seen: [String] = []
        var after: String?
        var pages = 0
        repeat {
            var url = blobd.baseURL + "/v1/blobs?prefix=page%2F&limit=10"
            if let after { url += "&after=" + (after.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? after) }
            let page = try curl([url])
            let items = try #require(page.json["blobs"] as? [[String: Any]])
            #expect(items.count <= 10)
            seen += items.compactMap { $0["key"] as? String }
            after = page.json["next"] as? String
            if let after { #expect(after == seen.last) }
            pages += 1
        } while after != nil && pages < 10
        #expect(pages == 3)
        #expect(seen == (0..<25).map { String(format: "page/%02d", $0) })
    }

    @Test func limits() throws {
        let blobd = try BlobdProcess()
        for i in 0..<3 { _ = try curl(["-X", "PUT", "--data-binary", "x", blobd.baseURL + "/v1/blobs/k\(i)"]) }
        let clamped = try curl([blobd.baseURL + "/v1/blobs?limit=99999999999"])
        #expect(clamped.status == 200)
        #expect((clamped.json["blobs"] as? [Any])?.count == 3)
        let exact = try curl([blobd.baseURL + "/v1/blobs?limit=3"])
        #expect(exact.json["next"] is NSNull, "no further page")
        let short = try curl([blobd.baseURL + "/v1/blobs?limit=2"])
        #expect(short.json["next"] as? String == "k1")
        for bad in ["abc", "-1", "1.5", ""] {
            let response = try curl([blobd.baseURL + "/v1/blobs?limit=\(bad)"])
            #expect(response.status == 400, "limit=\(bad)")
            #expect(response.header("Content-Type") == "application/problem+json")
        }
        #expect(try curl([blobd.baseURL + "/v1/blobs?prefix=%zz"]).status == 400)
    }
}

import Foundation
import LiveBlobd
import Testing

/// /v1 and tus bodies of 1 MiB and more are hashed on a second thread while the connection's
/// thread writes; smaller ones inline. Bodies just under, at and over the threshold, and tus
/// uploads whose PATCHes cross it, must store the exact bytes under the exact digests, and a
/// wrong digest must leave nothing stored.
@Suite struct PipelinedHashTests {
    static let mib = 1 << 20
    static let sizes = [mib - 1, mib, mib + 1]

    @Test func v1BodiesAroundOneMiBHaveExactDigests() throws {
        let blobd = try BlobdProcess()
        let dir = TempDir()
        for (index, size) in (Self.sizes + [3 * Self.mib + 7]).enumerated() {
            let bytes = testBytes(size, seed: UInt64(40 + index))
            let file = dir.file("body-\(index)", bytes)
            let digest = sha256Base64(bytes)
            let url = blobd.baseURL + "/v1/blobs/piped/\(size)"
            let put = try curl(["-X", "PUT", "--data-binary", "@" + file, "-H", "Content-Digest: sha-256=:\(digest):", url])
            #expect(put.status == 201, "PUT of \(size) bytes")
            #expect(put.json["sha256"] as? String == sha256Hex(bytes))
            let get = try curl([url])
            #expect(get.body == bytes)
            #expect(get.header("Repr-Digest") == "sha-256=:\(digest):")
            // Content-addressed, without a Content-Length (chunked: hashed on the second thread).
            let post = try curl(["-X", "POST", "-H", "Transfer-Encoding: chunked", "-H", "Repr-Digest: sha-256=:\(digest):",
                                 "--data-binary", "@" + file, blobd.baseURL + "/v1/blobs"])
            #expect(post.status == 201, "POST of \(size) bytes")
            #expect(post.header("Location") == "/v1/blobs/" + sha256Hex(bytes))
            #expect(try curl([blobd.baseURL + "/v1/blobs/" + sha256Hex(bytes)]).header("Repr-Digest") == "sha-256=:\(digest):")
        }
    }

    @Test func v1WrongDigestStoresNothing() throws {
        let blobd = try BlobdProcess()
        let dir = TempDir()
        for size in Self.sizes + [3 * Self.mib] {
            let bytes = testBytes(size, seed: UInt64(size))
            let file = dir.file("body-\(size)", bytes)
            var other = bytes
            other[size / 2] ^= 1
            let wrong = "sha-256=:\(sha256Base64(other)):"
            let url = blobd.baseURL + "/v1/blobs/wrong/\(size)"
            for (method, field) in [("PUT", "Content-Digest"), ("PUT", "Repr-Digest")] {
                let refused = try curl(["-X", method, "--data-binary", "@" + file, "-H", "\(field): \(wrong)", url])
                #expect(refused.status == 400, "\(field) on \(size) bytes")
                #expect(refused.header("Content-Type") == "application/problem+json")
            }
            let chunked = try curl(["-X", "POST", "-H", "Transfer-Encoding: chunked", "-H", "Content-Digest: \(wrong)",
                                    "--data-binary", "@" + file, blobd.baseURL + "/v1/blobs"])
            #expect(chunked.status == 400)
            #expect(try curl([url]).status == 404)
        }
        #expect((try curl([blobd.baseURL + "/v1/blobs?limit=10"]).json["blobs"] as? [Any])?.isEmpty == true)
        #expect(files(under: blobd.dataDir + "/blobs").isEmpty, "no blob file left behind")
    }

    /// PATCHes under, at and over 1 MiB, a restart between two (the hash state comes back from
    /// the index), a refused Upload-Checksum on a large PATCH, then the blob's exact digest.
    @Test func tusPatchesCrossingOneMiB() throws {
        let dir = TempDir()
        var blobd: BlobdProcess? = try BlobdProcess(dataDir: dir.path + "/data")
        let mib = Self.mib
        let bytes = testBytes(5 * mib + 3, seed: 77)
        let created = try Tus(blobd: try #require(blobd)).create(length: bytes.count)
        let location = try #require(created.header("Location"))
        let cuts = [0, mib - 1, 2 * mib - 1, 3 * mib, 4 * mib + 1, bytes.count]
        for (index, (start, end)) in zip(cuts, cuts.dropFirst()).enumerated() {
            if index == 2 {
                _ = blobd?.stop()
                blobd = try BlobdProcess(dataDir: dir.path + "/data")
            }
            let tus = Tus(blobd: try #require(blobd))
            let piece = Array(bytes[start..<end])
            if index == 3 {
                var other = piece
                other[0] ^= 1
                let bad = try tus.patch(location, offset: start, piece,
                                        extra: ["-H", "Upload-Checksum: sha256 \(sha256Base64(other))"])
                #expect(bad.status == 460)
                #expect(try tus.head(location).header("Upload-Offset") == String(start), "the refused PATCH left nothing")
            }
            let patch = try tus.patch(location, offset: start, piece, extra: ["-H", "Upload-Checksum: sha256 \(sha256Base64(piece))"])
            #expect(patch.status == 204, "PATCH \(index)")
            #expect(patch.header("Upload-Offset") == String(end))
        }
        let key = sha256Hex(bytes)
        #expect(try Tus(blobd: try #require(blobd)).head(location).header("Content-Location") == "/v1/blobs/" + key)
        let blob = try curl([try #require(blobd).baseURL + "/v1/blobs/" + key])
        #expect(blob.body == bytes)
        #expect(blob.header("Repr-Digest") == "sha-256=:\(sha256Base64(bytes)):")
    }
}

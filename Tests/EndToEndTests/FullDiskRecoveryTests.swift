import Foundation
import LiveBlobd
import Testing

/// Issue 20, items 12 and 13: a full disk is not a dead end. Deletes use a reserve only they
/// (and the index) may take, `/readyz` says when the disk is full, of bytes or of inodes, and
/// writes come back once there is room again.
@Suite(.enabled(if: SmallFileSystem.canMount, "needs root to mount a tmpfs"))
struct FullDiskRecoveryTests {
    @Test func deletesWorkOnAFullDiskEvenAfterARestart() throws {
        let small = try SmallFileSystem(megabytes: 4)
        let dataDir = small.path + "/data"
        var blobd = try BlobdProcess(dataDir: dataDir)
        #expect(try curl(["-X", "PUT", "--data-binary", "first", blobd.baseURL + "/v1/blobs/k"]).status == 201)
        #expect(try curl(["-X", "PUT", "--data-binary", "second", blobd.baseURL + "/v1/blobs/k2"]).status == 201)
        #expect(try curl([blobd.baseURL + "/readyz"]).status == 200)
        let filler = small.fill()
        #expect(try curl([blobd.baseURL + "/readyz"]).status == 503, "a full disk is not ready")
        #expect(try curl(["-X", "PUT", "--data-binary", "more", blobd.baseURL + "/v1/blobs/more"]).status == 507)
        #expect(blobd.stop() == 0)

        // Started again on the full disk (the default --min-free-bytes 0): deletes work.
        blobd = try BlobdProcess(dataDir: dataDir)
        let b = blobd.baseURL
        #expect(try curl([b + "/readyz"]).status == 503)
        let deleted = try curl(["-X", "DELETE", b + "/v1/blobs/k"])
        #expect(deleted.status == 204, "\(deleted.text)")
        #expect(try curl([b + "/v1/blobs/k"]).status == 404)
        #expect(blobd.stderr.contains("the space reserve went to a delete"), "the index could not record it without the reserve")
        #expect(try curl([b + "/v1/blobs/k2"]).text == "second")
        #expect(try curl(["-X", "DELETE", b + "/v1/blobs/k2"]).status == 204)
        #expect(try curl(["-X", "PUT", "--data-binary", "more", b + "/v1/blobs/more"]).status == 507,
                "writes wait until the reserve is whole again")
        #expect(try curl([b + "/readyz"]).status == 503)

        // The recovery README gives: free space, and blobd takes its reserve back by itself.
        unlink(filler)
        #expect(try curl([b + "/readyz"]).status == 200)
        #expect(try curl(["-X", "PUT", "--data-binary", "more", b + "/v1/blobs/more"]).status == 201)
        #expect(blobd.stop() == 0)
        #expect(try run(blobdExecutable(), ["fsck", "--data-dir", dataDir]).status == 0)
    }

    @Test func runningOutOfInodesIsAFullDisk() throws {
        let small = try SmallFileSystem(megabytes: 16, inodes: 400)
        let blobd = try BlobdProcess(dataDir: small.path + "/data")
        let b = blobd.baseURL
        #expect(try curl(["-X", "PUT", "--data-binary", "kept", b + "/v1/blobs/kept"]).status == 201)
        #expect(try curl([b + "/readyz"]).status == 200)
        // Each resumable upload is a file: create them until blobd refuses.
        let tus = Tus(blobd: blobd)
        var created = 0, refused: CurlResponse?
        while refused == nil && created < 400 {
            let response = try tus.create(length: 10)
            if response.status == 201 { created += 1 } else { refused = response }
        }
        #expect(refused?.status == 507)
        #expect(refused?.json["type"] as? String == "https://blobd.dev/problems/insufficient-storage")
        var info = statvfs()
        #expect(statvfs(small.path, &info) == 0)
        #expect(info.f_favail >= 63, "blobd stops with inodes to spare, not at ENOSPC (\(info.f_favail) left)")
        #expect(try curl([b + "/readyz"]).status == 503, "out of inodes is not ready")
        #expect(try curl(["-X", "PUT", "--data-binary", "x", b + "/v1/blobs/new"]).status == 507)
        #expect(try curl(["-X", "DELETE", b + "/v1/blobs/kept"]).status == 204)
        #expect(blobd.stop() == 0)
    }
}

import Foundation
import LiveBlobd
import Testing

/// The saved state of resumable uploads (issue 11, point 8).
@Suite struct UploadStateTests {
    /// Sets the `hash_state` of upload `id` in a stopped blobd's index.
    static func setHashState(_ dataDir: String, id: String, hex: String) throws {
        let script = "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('UPDATE uploads SET hash_state=? WHERE id=?', (bytes.fromhex(sys.argv[3]), sys.argv[2])); c.commit()"
        let result = try run("/usr/bin/env", ["python3", "-c", script, dataDir + "/index.sqlite", id, hex])
        #expect(result.status == 0, "\(result.stderr)")
    }

    /// A damaged row gives a clear problem, never a crash; the upload can still be removed.
    @Test func damagedHashStateGivesAClearError() throws {
        let dir = TempDir()
        let dataDir = dir.path + "/data"
        let bytes = testBytes(300, seed: 5)
        var location = ""
        do {
            let blobd = try BlobdProcess(dataDir: dataDir)
            location = try #require(try Tus(blobd: blobd).create(length: bytes.count, metadata: ["key": "resumed"]).header("Location"))
            #expect(try Tus(blobd: blobd).patch(location, offset: 0, Array(bytes[..<100])).status == 204)
            #expect(blobd.stop() == 0)
        }
        let id = String(location.split(separator: "/").last ?? "")
        // 112 bytes of garbage (the size of OpenSSL's raw context), and a state of the wrong byte count.
        for damaged in [String(repeating: "ff", count: 112), "01" + String(repeating: "00", count: 40)] {
            try Self.setHashState(dataDir, id: id, hex: damaged)
            let blobd = try BlobdProcess(dataDir: dataDir)
            let tus = Tus(blobd: blobd)
            let patch = try tus.patch(location, offset: 100, Array(bytes[100...]))
            #expect(patch.status == 500)
            #expect(patch.header("Content-Type") == "application/problem+json")
            #expect(patch.json["type"] as? String == "https://blobd.dev/problems/upload-state-invalid")
            #expect(try tus.head(location).header("Upload-Offset") == "100", "the upload is left as it was")
            #expect(try curl([blobd.baseURL + "/healthz"]).status == 200, "the server keeps serving")
            #expect(blobd.stop() == 0)
        }
        let blobd = try BlobdProcess(dataDir: dataDir)
        #expect(try curl(["-X", "DELETE", "-H", "Tus-Resumable: 1.0.0", blobd.baseURL + location]).status == 204)
    }

    /// The state is saved in the documented portable form: format 1, H0…H7, the byte count
    /// (equal to the offset), the pending bytes.
    @Test func savedStateIsPortable() throws {
        let dir = TempDir()
        let dataDir = dir.path + "/data"
        let bytes = testBytes(1000, seed: 6)
        let blobd = try BlobdProcess(dataDir: dataDir)
        let tus = Tus(blobd: blobd)
        let location = try #require(try tus.create(length: bytes.count, metadata: ["key": "portable"]).header("Location"))
        #expect(try tus.patch(location, offset: 0, Array(bytes[..<130])).status == 204)
        #expect(blobd.stop() == 0)
        let id = String(location.split(separator: "/").last ?? "")
        let script = "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute('SELECT hex(hash_state) FROM uploads WHERE id=?', (sys.argv[2],)).fetchone()[0])"
        let saved = String(decoding: try run("/usr/bin/env", ["python3", "-c", script, dataDir + "/index.sqlite", id]).stdout, as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        #expect(saved.count == 2 * (41 + 130 % 64))
        #expect(saved.hasPrefix("01"))
        #expect(saved.dropFirst(66).prefix(16) == "0000000000000082", "the byte count, 130, big-endian")
        #expect(saved.hasSuffix(bytes[128..<130].map { String(format: "%02x", $0) }.joined()), "the pending bytes")
        // And it resumes to the right blob.
        let restarted = try BlobdProcess(dataDir: dataDir)
        #expect(try Tus(blobd: restarted).patch(location, offset: 130, Array(bytes[130...])).status == 204)
        #expect(sha256Hex(try curl([restarted.baseURL + "/v1/blobs/portable"]).body) == sha256Hex(bytes))
    }
}

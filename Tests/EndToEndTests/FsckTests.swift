import Foundation
import LiveBlobd
import Testing

@Suite struct FsckTests {
    /// The blob file of `key`, found through its ETag (the version is the file name).
    func file(of etag: String, in dataDir: String) -> String {
        let version = etag.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        return "\(dataDir)/blobs/\(version.prefix(2))/\(version)"
    }

    @Test func findsAndRepairsCorruptMissingAndUnindexedFiles() throws {
        let dir = TempDir()
        let dataDir = dir.path + "/data"
        var etags: [String: String] = [:]
        do {
            let blobd = try BlobdProcess(dataDir: dataDir)
            for key in ["good", "corrupt", "missing"] {
                etags[key] = try curl(["-X", "PUT", "--data-binary", "content of \(key)", blobd.baseURL + "/v1/blobs/" + key]).header("ETag")
            }
            // fsck refuses while blobd holds the data dir.
            let refused = try run(blobdExecutable(), ["fsck", "--data-dir", dataDir])
            #expect(refused.status == 2)
            #expect(refused.stderr.contains("in use"))
            #expect(blobd.stop() == 0)
        }
        #expect(try run(blobdExecutable(), ["fsck", "--data-dir", dataDir]).status == 0)

        try Data("CONTENT OF CORRUPT".utf8).write(to: URL(fileURLWithPath: file(of: etags["corrupt"] ?? "", in: dataDir)))
        try FileManager.default.removeItem(atPath: file(of: etags["missing"] ?? "", in: dataDir))
        let strayFolder = dataDir + "/blobs/ff"
        try Data("stray".utf8).write(to: URL(fileURLWithPath: strayFolder + "/ffff0000000000000000000000000000"))

        let check = try run(blobdExecutable(), ["fsck", "--data-dir", dataDir])
        let output = String(decoding: check.stdout, as: UTF8.self)
        #expect(check.status == 1)
        #expect(output.contains("corrupt corrupt\n"))
        #expect(output.contains("missing missing\n"))
        #expect(output.contains("unindexed blobs/ff/ffff0000000000000000000000000000\n"))
        #expect(output.contains("checked 3 blobs: 1 corrupt, 1 missing, 1 unindexed"))

        let repaired = try run(blobdExecutable(), ["fsck", "--data-dir", dataDir, "--repair"])
        #expect(repaired.status == 1, "problems were found, even if repaired")
        let quarantined = Set(try FileManager.default.contentsOfDirectory(atPath: dataDir + "/quarantine"))
        #expect(quarantined.count == 2, "corrupt and unindexed files are kept, not deleted")
        #expect(try run(blobdExecutable(), ["fsck", "--data-dir", dataDir]).status == 0)

        let blobd = try BlobdProcess(dataDir: dataDir)
        #expect(try curl([blobd.baseURL + "/v1/blobs/good"]).text == "content of good")
        #expect(try curl([blobd.baseURL + "/v1/blobs/corrupt"]).status == 404)
        #expect(try curl([blobd.baseURL + "/v1/blobs/missing"]).status == 404)
    }
}

import Foundation
import LiveBlobd
import Testing

extension ClusterTests {
    /// Rows whose key blobd refuses, written into PostgreSQL behind its back: a listing skips
    /// them without stopping short of the rows after them, the node logs each with its raw key,
    /// and fsck lists them and is not clean.
    @Test func rowsWithInvalidKeysAreReportedNotDropped() throws {
        let cluster = try ClusterTests.Cluster(nodes: ["a"])
        let node = cluster.nodes[0]
        for key in ["a", "z"] {
            #expect(try curl(["-X", "PUT", "--data-binary", key, node.baseURL + "/v1/blobs/" + key]).status == 201)
        }
        // "b/\0", "b/../c" and "b/./1", copies of a's row.
        let copied = try cluster.postgres.psql("""
            INSERT INTO blobs (key, version, size, sha256, content_type, modified)
            SELECT k, version, size, sha256, content_type, modified FROM blobs,
                (VALUES ('\\x622f00'::bytea), ('\\x622f2e2e2f63'::bytea), ('\\x622f2e2f31'::bytea)) AS v(k)
            WHERE key = 'a'::bytea
            """, database: "blobd")
        #expect(copied.status == 0, "\(copied.stderr)")

        let page = try curl([node.baseURL + "/v1/blobs?limit=1&after=a"])
        #expect((page.json["blobs"] as? [[String: Any]])?.compactMap { $0["key"] as? String } == ["z"])
        let all = try curl([node.baseURL + "/v1/blobs?limit=2"])
        #expect((all.json["blobs"] as? [[String: Any]])?.compactMap { $0["key"] as? String } == ["a", "z"])

        let fsck = try run(blobdExecutable(), ["fsck", "--data-dir", cluster.dataDir, "--index", cluster.postgres.url])
        let output = String(decoding: fsck.stdout, as: UTF8.self)
        #expect(fsck.status == 1, "\(output) \(fsck.stderr)")
        #expect(output.contains("invalid-key b/%00\ninvalid-key b/../c\ninvalid-key b/./1\n"), "\(output)")
        #expect(output.contains("checked 2 blobs: 0 corrupt, 0 missing, 0 unindexed, 3 with an invalid key"), "\(output)")
        #expect(node.stop() == 0)
        #expect(node.stderr.contains("b/%00") && node.stderr.contains("b/./1"), "\(node.stderr)")
    }
}

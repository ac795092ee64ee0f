import Foundation
import LiveBlobd
import Testing

/// The same, on a real distributed file system: each node on its own ceph-fuse mount of one
/// CephFS (tools/ceph-local.sh), so every write crosses the Ceph client cache and the MDS.
@Suite(.serialized, .enabled(if: PostgresServer.isInstalled && CephCluster.isInstalled, "Ceph and PostgreSQL are installed by make deps"))
struct CephClusterTests {
    @Test func twoNodesOnTheirOwnCephFuseMounts() throws {
        let ceph = try CephCluster(mounts: 2)
        let cluster = try ClusterTests.Cluster(dataDirs: ceph.mounts.map { $0 + "/blobd" })
        try ClusterTests.readAfterWrite(cluster, count: 200)
        try ClusterTests.oneWinner(cluster)
        try ClusterTests.tusAcrossNodes(cluster)
        try ClusterTests.killedNode(cluster)
    }
}

import Foundation
import LiveBlobd
import Testing

/// A throwaway single-node Ceph (mon, OSD, MDS, CephFS) with one ceph-fuse mount per node,
/// from tools/ceph-local.sh; stopped (unmounted, daemons killed by PID) on deinit.
final class CephCluster: @unchecked Sendable {
    static let script = DeployTests.root.appendingPathComponent("tools/ceph-local.sh").path
    static var isInstalled: Bool {
        ["ceph-mon", "ceph-osd", "ceph-mds", "ceph-fuse"].allSatisfy { FileManager.default.isExecutableFile(atPath: "/usr/bin/" + $0) }
    }

    let dir = TempDir("blobd-ceph")
    /// The mount points, each its own ceph-fuse client of the same CephFS.
    let mounts: [String]

    init(mounts count: Int) throws {
        let base = dir.path
        let wanted = (0..<count).map { "\(base)/mount\($0)" }
        let started = try runLeavingDaemons([Self.script, "start", base + "/cluster"] + wanted.flatMap { ["--fuse", $0] }, timeout: 180)
        guard started.status == 0 else {
            _ = try? runLeavingDaemons([Self.script, "stop", base + "/cluster"], timeout: 60)
            throw TestFailure("tools/ceph-local.sh start: \(started.stderr)")
        }
        mounts = wanted
    }

    deinit {
        _ = try? runLeavingDaemons([Self.script, "stop", dir.path + "/cluster"], timeout: 90)
    }
}

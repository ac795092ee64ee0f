import HTTPCore
import Testing
import Observability

/// `/metrics`' free-space gauges (issue 35, item 19), rendered from the values given.
@Suite struct MetricsTests {
    @Test func freeSpaceGauges() {
        let text = Metrics(version: "t").render(blobs: nil, space: (free: 123_456_789, minimum: 65_536))
        #expect(text.contains("# HELP blobd_data_free_bytes Bytes free for blobd on the data directory's file system (statvfs).\n"
                              + "# TYPE blobd_data_free_bytes gauge\nblobd_data_free_bytes 123456789\n"))
        #expect(text.contains("# TYPE blobd_data_min_free_bytes gauge\nblobd_data_min_free_bytes 65536\n"))
        let node = Metrics(version: "t", node: "n1").render(blobs: nil, space: (free: 7, minimum: 65_536))
        #expect(node.contains("\nblobd_data_free_bytes{node=\"n1\"} 7\n"))
        #expect(node.contains("\nblobd_data_min_free_bytes{node=\"n1\"} 65536\n"))
    }

    /// A file system that reports no size (ceph-fuse without a manager) has no free gauge, rather than 0.
    @Test func unknownFreeSpaceIsLeftOut() {
        let text = Metrics(version: "t").render(blobs: nil, space: (free: nil, minimum: 1_048_576))
        #expect(!text.contains("blobd_data_free_bytes"))
        #expect(text.contains("\nblobd_data_min_free_bytes 1048576\n"))
        #expect(!Metrics(version: "t").render(blobs: nil).contains("blobd_data_"))
    }
}

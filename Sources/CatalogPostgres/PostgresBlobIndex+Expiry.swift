import BlobCatalog
import BlobCore
import Foundation
import PostgresClient

/// The index in PostgreSQL: the expiry sweep and the deadlines it finds blobs by (`blobs_by_expiry`).
extension PostgresBlobIndex {
    public func stampExpiry(_ stamps: [ExpiryStamp]) throws(StoreError) {
        guard !stamps.isEmpty else { return }
        try transaction { connection throws(PostgresError) in
            for stamp in stamps {
                try connection.execute("UPDATE blobs SET expires_at = $1 WHERE key = $2 AND version = $3",
                                       [stamp.expiresAt.map { .int($0) } ?? .null, .bytes(stamp.key.bytes), .text(stamp.version)])
            }
        }
    }

    /// The query plan of the sweep's selection, with sequential scans priced out (a test's table
    /// is too small for the planner to prefer any index): the tests check it can read `blobs_by_expiry`.
    public func expirySweepPlan() throws(StoreError) -> String {
        try run { () throws(PostgresError) in
            try pool.transaction { connection throws(PostgresError) in
                try connection.simple("SET LOCAL enable_seqscan = off")
                return try connection.execute("EXPLAIN SELECT key FROM blobs WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2",
                                              [.int(0), .int(1)]).rows.compactMap { $0.text("QUERY PLAN") }.joined(separator: "\n")
            }
        }
    }
}

import BlobCatalog
import BlobCore
import Foundation
import GRDB

/// The index in SQLite: the expiry sweep and the deadlines it finds blobs by (`blobs_by_expiry`).
extension SQLiteBlobIndex {
    public func stampExpiry(_ stamps: [ExpiryStamp]) throws(StoreError) {
        guard !stamps.isEmpty else { return }
        try write { db in
            for stamp in stamps {
                try db.cachedStatement(sql: "UPDATE blobs SET expires_at = ? WHERE key = ? AND version = ?")
                    .execute(arguments: [stamp.expiresAt, Data(stamp.key.bytes), stamp.version])
            }
        }
    }

    /// The query plan of the sweep's selection (the tests check it reads `blobs_by_expiry`).
    public func expirySweepPlan() throws(StoreError) -> String {
        try run {
            try pool.read { db in
                try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN SELECT * FROM blobs WHERE expires_at <= ? ORDER BY expires_at LIMIT ?",
                                 arguments: [0, 1]).map { $0["detail"] as String? ?? "" }.joined(separator: "\n")
            }
        }
    }
}

import BlobCatalog
import BlobCore
import Foundation
import GRDB

/// The index in SQLite: the expiry sweep and the deadlines it finds blobs by (`blobs_by_expiry`).
extension SQLiteBlobIndex {
    public func removeExpired(now: Int64, limit: Int, deadline: (BlobRecord) -> Int64?, versioned: (BlobRecord) -> ExpiryDeletion?,
                              events: (BlobRecord) -> EventDraft?) throws(StoreError) -> ExpirySweep {
        try write { db in
            // The one writer: no other sweep can run meanwhile.
            let due = try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM blobs WHERE expires_at <= ? ORDER BY expires_at LIMIT ?"),
                                       arguments: [now, limit])
            var removed: [BlobRecord] = []
            var garbage: [String] = []
            for row in due {
                let keyBytes: Data = row["key"]
                guard let record = SQLiteBlobRow.record(from: row, reportingTo: invalidKeys) else {
                    // A row blobd cannot name: it keeps no deadline, so the sweep stops finding it.
                    try db.execute(sql: "UPDATE blobs SET expires_at = NULL WHERE key = ?", arguments: [keyBytes])
                    continue
                }
                let current = deadline(record)
                if let current, current <= now {
                    if let deletion = versioned(record) {
                        // As a DELETE in a versioned bucket: the record is kept, a delete marker is the latest.
                        let deadline = deletion.noncurrentDays.map { LifecycleRule.nextMidnight(deletion.marker.modified + $0 * 86_400) }
                        garbage += try Self.markDeleted(record, marker: deletion.marker, versioning: deletion.versioning,
                                                        noncurrentDeadline: deadline, in: db)
                        if let draft = events(deletion.marker) { try insertEvents(draft, for: deletion.marker, in: db) }
                    } else {
                        try db.cachedStatement(sql: "DELETE FROM blobs WHERE key = ?").execute(arguments: [keyBytes])
                        try Self.addGarbage(record.version, in: db)
                        garbage.append(record.version)
                        if let draft = events(record) { try insertEvents(draft, for: record, in: db) }
                    }
                    removed.append(record)
                } else {
                    try db.execute(sql: "UPDATE blobs SET expires_at = ? WHERE key = ?", arguments: [current, keyBytes])
                }
            }
            return ExpirySweep(removed: removed, examined: due.count, garbage: garbage)
        }
    }

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

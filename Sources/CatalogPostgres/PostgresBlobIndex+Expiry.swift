import BlobCatalog
import BlobCore
import Foundation
import PostgresClient

/// The index in PostgreSQL: the expiry sweep and the deadlines it finds blobs by (`blobs_by_expiry`).
extension PostgresBlobIndex {
    /// One node sweeps at a time (a transaction-level advisory lock; the others are `skipped`),
    /// and the rows are locked as they are read (`SKIP LOCKED`: a row a writer holds waits for a
    /// later batch), so no row is deleted twice and no sweep waits on a write.
    public func removeExpired(now: Int64, limit: Int, deadline: (BlobRecord) -> Int64?, versioned: (BlobRecord) -> ExpiryDeletion?,
                              events: (BlobRecord) -> EventDraft?) throws(StoreError) -> ExpirySweep {
        try run { () throws(PostgresError) in
            try pool.transaction { connection throws(PostgresError) in
                guard try connection.execute("SELECT pg_try_advisory_xact_lock(\(PostgresSchema.expiryLock)) AS locked")
                    .rows.first?.bool("locked") == true else { return ExpirySweep(skipped: true) }
                let due = try connection.execute("""
                    SELECT \(PostgresBlobRow.selection) FROM blobs WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED
                    """, [.int(now), .int(Int64(limit))]).rows
                var removed: [BlobRecord] = []
                // The versions of unversioned removals (recorded as garbage together), and those
                // the versioned ones made garbage (recorded already).
                var plain: [String] = [], garbage: [String] = []
                for row in due {
                    guard let keyBytes = row.bytes("key") else { continue }
                    guard let record = PostgresBlobRow.record(from: row, reportingTo: invalidKeys) else {
                        try connection.execute("UPDATE blobs SET expires_at = NULL WHERE key = $1", [.bytes(keyBytes)])
                        continue
                    }
                    let current = deadline(record)
                    if let current, current <= now {
                        if let deletion = versioned(record) {
                            // As a DELETE in a versioned bucket, under the key's lock; a key another
                            // transaction holds waits for a later batch (waiting could deadlock).
                            guard try Self.tryLock(record.key, in: connection) else { continue }
                            let deadline = deletion.noncurrentDays.map { LifecycleRule.nextMidnight(deletion.marker.modified + $0 * 86_400) }
                            garbage += try Self.markDeleted(record, marker: deletion.marker, versioning: deletion.versioning,
                                                            noncurrentDeadline: deadline, in: connection)
                            if let draft = events(deletion.marker) { try Self.insertEvents(draft, for: deletion.marker, in: connection) }
                        } else {
                            try connection.execute("DELETE FROM blobs WHERE key = $1", [.bytes(keyBytes)])
                            plain.append(record.version)
                            if let draft = events(record) { try Self.insertEvents(draft, for: record, in: connection) }
                        }
                        removed.append(record)
                    } else {
                        try connection.execute("UPDATE blobs SET expires_at = $1 WHERE key = $2",
                                               [current.map { .int($0) } ?? .null, .bytes(keyBytes)])
                    }
                }
                try Self.addGarbage(plain, in: connection)
                return ExpirySweep(removed: removed, examined: due.count, garbage: plain + garbage)
            }
        }
    }

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

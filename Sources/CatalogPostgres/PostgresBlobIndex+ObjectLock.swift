import BlobCatalog
import BlobCore
import Foundation
import PostgresClient

/// The index in PostgreSQL: Object Lock per version (`lock_mode`, `lock_until`, `legal_hold` in
/// `blobs` and `blob_versions`), changed under the key's lock, as every versioned operation is.
extension PostgresBlobIndex {
    public func setLock(_ key: BlobKey, id: String?, retention: ObjectLock?, legalHold: Bool?,
                        bypassGovernance: Bool) throws(StoreError) -> BlobVersion {
        let result: Result<BlobVersion, StoreError> = try run { () throws(PostgresError) in
            try pool.transaction { connection throws(PostgresError) in
                try connection.execute("SELECT pg_advisory_xact_lock(hashtextextended(encode($1::bytea, 'hex'), 25))", [.bytes(key.bytes)])
                let current = try Self.fetchForUpdate([key], in: connection)[key]
                var target: BlobVersion
                var seq: Int64?
                if let current, id == nil || current.versionID == id {
                    target = BlobVersion(record: current, latest: true)
                } else if let id, let (found, version) = try Self.noncurrent(key, id: id, in: connection), !version.deleteMarker {
                    (seq, target) = (found, version)
                } else {
                    return .failure(.notFound)
                }
                var lock = target.record.lock
                if let retention {
                    if let failure = lock.retentionChangeFailure(to: retention, at: Int64(time(nil)),
                                                                 bypassingGovernance: bypassGovernance) {
                        return .failure(failure)
                    }
                    (lock.mode, lock.retainUntil) = (retention.mode, retention.retainUntil)
                }
                if let legalHold { lock.legalHold = legalHold }
                let values: [PostgresValue] = [lock.mode.map { .text($0.rawValue) } ?? .null, lock.retainUntil.map { .int($0) } ?? .null,
                                               .text(lock.legalHold ? "t" : "f")]
                if let seq {
                    try connection.execute("UPDATE blob_versions SET lock_mode = $1, lock_until = $2, legal_hold = $3 WHERE seq = $4",
                                           values + [.int(seq)])
                } else {
                    try connection.execute("UPDATE blobs SET lock_mode = $1, lock_until = $2, legal_hold = $3 WHERE key = $4",
                                           values + [.bytes(key.bytes)])
                }
                target.record.lock = lock
                return .success(target)
            }
        }
        return try result.get()
    }
}

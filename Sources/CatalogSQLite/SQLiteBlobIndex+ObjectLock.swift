import BlobCatalog
import BlobCore
import Foundation
import GRDB

/// The index in SQLite: Object Lock per version (`lock_mode`, `lock_until`, `legal_hold` in
/// `blobs` and `blob_versions`). Removals check it in their own transactions (`removeVersion`).
extension SQLiteBlobIndex {
    public func setLock(_ key: BlobKey, id: String?, retention: ObjectLock?, legalHold: Bool?,
                        bypassGovernance: Bool) throws(StoreError) -> BlobVersion {
        let result: Result<BlobVersion, StoreError> = try write { db in
            let current = try Self.fetch(key, in: db)
            var target: BlobVersion
            var seq: Int64?
            if let current, id == nil || current.versionID == id {
                target = BlobVersion(record: current, latest: true)
            } else if let id, let (found, version) = try Self.noncurrent(key, id: id, in: db), !version.deleteMarker {
                (seq, target) = (found, version)
            } else {
                return .failure(.notFound)
            }
            var lock = target.record.lock
            if let retention {
                if let failure = lock.retentionChangeFailure(to: retention, at: Int64(time(nil)), bypassingGovernance: bypassGovernance) {
                    return .failure(failure)
                }
                (lock.mode, lock.retainUntil) = (retention.mode, retention.retainUntil)
            }
            if let legalHold { lock.legalHold = legalHold }
            let values: StatementArguments = [lock.mode?.rawValue, lock.retainUntil, lock.legalHold ? 1 : 0]
            if let seq {
                try db.execute(sql: "UPDATE blob_versions SET lock_mode = ?, lock_until = ?, legal_hold = ? WHERE seq = ?",
                               arguments: values + [seq])
            } else {
                try db.execute(sql: "UPDATE blobs SET lock_mode = ?, lock_until = ?, legal_hold = ? WHERE key = ?",
                               arguments: values + [Data(key.bytes)])
            }
            target.record.lock = lock
            return .success(target)
        }
        return try result.get()
    }
}

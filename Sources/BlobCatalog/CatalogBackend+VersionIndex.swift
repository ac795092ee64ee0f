import BlobCore

/// `VersionIndex` written once over a backend's transactions: each operation one transaction,
/// the time of day from the backend's clock.
extension VersionIndex where Self: CatalogBackend {
    public func deleteMarking(_ key: BlobKey, marker: BlobRecord, if condition: WriteCondition,
                              events: EventDraft?) throws(StoreError) -> VersionRemoval {
        try writing { transaction throws(Transaction.Failure) in
            try transaction.deleteMarking(key, marker: marker, if: condition, events: events)
        }.get()
    }

    public func removeVersion(_ key: BlobKey, id: String, if condition: WriteCondition,
                              events: EventDraft?) throws(StoreError) -> VersionRemoval {
        try writing { transaction throws(Transaction.Failure) in
            try transaction.removeVersion(key, id: id, if: condition, events: events, now: clock.seconds)
        }.get()
    }

    public func setLock(_ key: BlobKey, id: String?, retention: ObjectLock?, legalHold: Bool?,
                        bypassGovernance: Bool) throws(StoreError) -> BlobVersion {
        try writing { transaction throws(Transaction.Failure) in
            try transaction.setLock(key, id: id, retention: retention, legalHold: legalHold, bypassGovernance: bypassGovernance,
                                    now: clock.seconds)
        }.get()
    }

    public func version(_ key: BlobKey, id: String) throws(StoreError) -> BlobVersion? {
        try reading { transaction throws(Transaction.Failure) in try transaction.version(key, id: id) }
    }

    public func newestNoncurrent(_ key: BlobKey) throws(StoreError) -> BlobVersion? {
        try reading { transaction throws(Transaction.Failure) in try transaction.newestNoncurrent(key)?.version }
    }

    public func versions(prefix: [UInt8], after cursor: VersionCursor?, limit: Int) throws(StoreError) -> [BlobVersion] {
        try reading { transaction throws(Transaction.Failure) in try transaction.versions(prefix: prefix, after: cursor, limit: limit) }
    }

    public func removeExpiredVersions(now: Int64, limit: Int, deadline: (DueVersion) -> Int64?,
                                      events: (BlobVersion) -> EventDraft?) throws(StoreError) -> VersionExpirySweep {
        try writing { transaction throws(Transaction.Failure) in
            try transaction.removeExpiredVersions(now: now, limit: limit, deadline: deadline, events: events)
        }
    }
}

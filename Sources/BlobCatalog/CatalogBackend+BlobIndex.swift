import BlobCore

/// The removals of `BlobIndex` written once over a backend's transactions (a commit batch is
/// the backend's own: `CatalogTransaction.apply` decides each of its commits).
extension BlobIndex where Self: CatalogBackend {
    public func remove(_ key: BlobKey, if condition: WriteCondition, events: EventDraft?) throws(StoreError) -> BlobRecord {
        try writing { transaction throws(Transaction.Failure) in
            try transaction.remove(key, if: condition, events: events, now: clock.seconds)
        }.get()
    }

    public func removeExpired(now: Int64, limit: Int, deadline: (BlobRecord) -> Int64?, versioned: (BlobRecord) -> ExpiryDeletion?,
                              events: (BlobRecord) -> EventDraft?) throws(StoreError) -> ExpirySweep {
        try writing { transaction throws(Transaction.Failure) in
            try transaction.removeExpired(now: now, limit: limit, deadline: deadline, versioned: versioned, events: events)
        }
    }
}

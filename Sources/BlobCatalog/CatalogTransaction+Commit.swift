import BlobCore

/// What a commit and a removal of a current record decide, on every backend.
extension CatalogTransaction {
    /// One commit, decided against the current record as the transaction (and the batch's
    /// earlier commits in it) left it: the condition is evaluated at `now`, Object Lock is
    /// checked for a version the commit would make garbage, and the record it replaces is kept
    /// as a noncurrent version or made garbage (`replace`). The upload it completes and its
    /// events are written with it.
    public func apply(_ request: CommitRequest, now: Int64) throws(Failure) -> Result<IndexCommit, StoreError> {
        let record = request.record
        let condition = request.condition
        var existing = try current(record.key)
        if let failure = condition.failure(for: existing?.unexpired(now: now)) { return .failure(failure) }
        if existing == nil {
            // A suspended bucket's new `null` version replaces a noncurrent one; a delete marker
            // it goes over stops being current.
            if condition.versioning != .unversioned { try replace(nil, key: record.key, under: condition, now: now) }
            if try insertCurrent(record) {
                try complete(request)
                return .success(.created)
            }
            // Another node created the key meanwhile: decide again against its row.
            existing = try current(record.key)
            if let failure = condition.failure(for: existing?.unexpired(now: now)) { return .failure(failure) }
        }
        guard let previous = existing else { return .failure(.preconditionFailed) }
        // A version this write would make garbage may be under Object Lock.
        if !condition.versioning.keeps(previous), let failure = condition.lockFailure(removing: previous, at: now) {
            return .failure(failure)
        }
        if condition.versioning == .unversioned {
            try addGarbage(previous.version)
        } else {
            try replace(previous, key: record.key, under: condition, now: now)
        }
        try updateCurrent(record)
        try complete(request)
        return .success(.replaced(previous: previous))
    }

    /// What a commit under `condition` does with `previous`, the record it replaces (before it
    /// is overwritten): keeps it as the newest noncurrent version, stamped with the deadline of
    /// the rules' NoncurrentDays, or makes its file garbage; over no record, the delete marker
    /// it goes over (if any) stops being current now. When suspended, the key's noncurrent
    /// `null` version goes too.
    func replace(_ previous: BlobRecord?, key: BlobKey, under condition: WriteCondition, now: Int64) throws(Failure) {
        let deadline = condition.noncurrentDeadline(at: now)
        if let previous {
            if condition.versioning.keeps(previous) {
                try archiveCurrent(key, sweepAt: deadline)
            } else {
                try addGarbage(previous.version)
            }
        } else if let deadline {
            try stampNewestMarker(key, sweepAt: deadline)
        }
        if condition.versioning == .suspended {
            for version in try dropNullNoncurrent(key) { try addGarbage(version) }
        }
    }

    /// The upload `request` completes, and its events.
    private func complete(_ request: CommitRequest) throws(Failure) {
        if let upload = request.completingUpload { try completeUpload(upload, into: request.record) }
        if let events = request.events { try insertEvents(events, facts: request.facts, for: request.record) }
    }

    /// Removes the current record of `key` if `condition` holds for it and Object Lock allows
    /// it at `now` (see `BlobIndex.remove`); its file becomes garbage.
    public func remove(_ key: BlobKey, if condition: WriteCondition, events: EventDraft?,
                       now: Int64) throws(Failure) -> Result<BlobRecord, StoreError> {
        guard let current = try self.current(key) else { return .failure(.notFound) }
        if let failure = condition.failure(for: current) ?? condition.lockFailure(removing: current, at: now) {
            return .failure(failure)
        }
        try deleteCurrent(key)
        try addGarbage(current.version)
        if let events { try insertEvents(events, facts: nil, for: current) }
        return .success(current)
    }
}

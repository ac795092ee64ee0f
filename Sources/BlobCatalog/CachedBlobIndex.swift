import BlobCore
import Synchronization

/// Keeps recently read records in memory in front of another index, so a GET of a hot key
/// costs no index query. Sound only while this process is the index's one writer, as with the
/// embedded SQLite index behind the data-directory lock: every write passes through here.
public final class CachedBlobIndex: BlobIndex {
    /// Entries kept before the cache starts over.
    static let capacity = 16_384

    private struct State {
        var records: [BlobKey: BlobRecord?] = [:]
        /// Bumped by every write: a lookup that raced with a write does not fill the cache.
        var generation: UInt64 = 0
    }

    private let base: any BlobIndex
    private let state = Mutex(State())

    public init(_ base: any BlobIndex) {
        self.base = base
    }

    public func record(for key: BlobKey) throws(StoreError) -> BlobRecord? {
        let (hit, generation) = state.withLock { ($0.records[key], $0.generation) }
        if let hit { return hit }
        let record = try base.record(for: key)
        state.withLock { state in
            guard state.generation == generation else { return }
            if state.records.count >= Self.capacity { state.records.removeAll(keepingCapacity: true) }
            state.records[key] = .some(record)
        }
        return record
    }

    public func commit(_ batch: [CommitRequest]) throws(StoreError) -> [Result<IndexCommit, StoreError>] {
        defer { for request in batch { forget(request.record.key) } }
        return try base.commit(batch)
    }

    public func batchAnswered() { base.batchAnswered() }

    public func remove(_ key: BlobKey, if condition: WriteCondition, events: EventDraft?) throws(StoreError) -> BlobRecord {
        defer { forget(key) }
        return try base.remove(key, if: condition, events: events)
    }

    public func removeExpired(now: Int64, limit: Int, deadline: (BlobRecord) -> Int64?, versioned: (BlobRecord) -> ExpiryDeletion?,
                              events: (BlobRecord) -> EventDraft?) throws(StoreError) -> ExpirySweep {
        let sweep = try base.removeExpired(now: now, limit: limit, deadline: deadline, versioned: versioned, events: events)
        // Rows stamped again (not deleted) are few and rare: start the cache over for them.
        if sweep.examined > sweep.removed.count {
            state.withLock { state in
                state.records.removeAll(keepingCapacity: true)
                state.generation &+= 1
            }
        } else {
            for record in sweep.removed { forget(record.key) }
        }
        return sweep
    }

    public func stampExpiry(_ stamps: [ExpiryStamp]) throws(StoreError) {
        defer { for stamp in stamps { forget(stamp.key) } }
        try base.stampExpiry(stamps)
    }

    /// Drops the key's entry after a write (successful or not: the next read asks the index).
    public func forget(_ key: BlobKey) {
        state.withLock { state in
            state.records[key] = nil
            state.generation &+= 1
        }
    }

    public func list(prefix: [UInt8], after: [UInt8]?, limit: Int) throws(StoreError) -> [BlobRecord] {
        try base.list(prefix: prefix, after: after, limit: limit)
    }
    public func containsVersion(_ version: String) throws(StoreError) -> Bool { try base.containsVersion(version) }
    public func allVersions() throws(StoreError) -> Set<String> { try base.allVersions() }
    public func versions(inFolder folder: String) throws(StoreError) -> Set<String> { try base.versions(inFolder: folder) }
    public func totals() throws(StoreError) -> (count: Int, bytes: UInt64) { try base.totals() }
}

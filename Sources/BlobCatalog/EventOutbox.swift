import BlobCore

/// The event outbox (DESIGN.md §6, "The outbox is part of the commit"): rows written by
/// `BlobIndex.commit(_:)` and `remove(_:if:events:)` in the transaction of the change they
/// report, then claimed, sent and deleted by each node's delivery loop. Times are milliseconds
/// since the epoch.
public protocol EventOutbox: Sendable {
    /// Claims up to `limit` events due at `now` for `node` until `leaseUntil`: only the oldest
    /// event of each (target, key), so that a later event for a key waits until the earlier one
    /// is gone; events leased by another node until after `now` are skipped (on PostgreSQL with
    /// `FOR UPDATE SKIP LOCKED`); this node's own leases are taken again. In id order. A
    /// catalog of one process (SQLite) has one claimer, which removes or releases every event
    /// it claimed before it claims again: there a claim holds nothing.
    func claimEvents(node: String, now: Int64, leaseUntil: Int64, limit: Int) throws(StoreError) -> [OutboxEvent]
    /// Deletes delivered (or dropped) events, in one transaction.
    func removeEvents(_ ids: [Int64]) throws(StoreError)
    /// Releases claimed events for another attempt each at its `nextAttempt`, with its count of
    /// attempts, in one transaction.
    func retryEvents(_ retries: [EventRetry]) throws(StoreError)
    /// Up to `limit` events in id order after `after`, and how many there are in all.
    func pendingEvents(after: Int64?, limit: Int) throws(StoreError) -> (events: [OutboxEvent], total: Int)
    /// Per target: how many events are pending, and when the oldest was made.
    func eventQueueStats() throws(StoreError) -> [String: (count: Int, oldest: Int64)]
}

/// A claimed event released for another attempt.
public struct EventRetry: Sendable, Equatable {
    public var id: Int64
    public var attempts: Int
    public var nextAttempt: Int64

    public init(id: Int64, attempts: Int, nextAttempt: Int64) {
        self.id = id
        self.attempts = attempts
        self.nextAttempt = nextAttempt
    }
}

extension EventOutbox {
    /// Releases one claimed event for another attempt at `nextAttempt`, counting the attempt.
    public func retryEvent(_ id: Int64, attempts: Int, nextAttempt: Int64) throws(StoreError) {
        try retryEvents([EventRetry(id: id, attempts: attempts, nextAttempt: nextAttempt)])
    }

    /// Deletes one delivered (or dropped) event.
    public func removeEvent(_ id: Int64) throws(StoreError) {
        try removeEvents([id])
    }
}

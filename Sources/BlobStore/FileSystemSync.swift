import Foundation

/// Makes writes durable with one syncfs(2) of the data directory's file system, shared by
/// everyone waiting: a write takes a `ticket` once its bytes are handed to the kernel and
/// `wait`s for it; every sync serves all tickets issued before it started. So one flush of the
/// disk can make a batch's blob files durable and, in the same pass, the index transaction of the
/// batch before it (see `SQLiteBlobIndex.commit`).
///
/// Syncs run one at a time, on the thread of whoever needs one first.
final class FileSystemSync: @unchecked Sendable {
    /// A sync number: waiting for it returns once that sync (or a later one) has completed.
    typealias Ticket = UInt64

    private let flush: @Sendable () throws(StoreError) -> Void
    /// Guards the counters below; waiters sleep on it.
    private let condition = NSCondition()
    private var started: Ticket = 0
    private var completed: Ticket = 0
    private var lastFailure: (sync: Ticket, error: StoreError)?

    /// `flush` makes everything written so far durable (syncfs of the data directory).
    init(flush: @escaping @Sendable () throws(StoreError) -> Void) {
        self.flush = flush
    }

    /// The first sync that starts after this call: waiting for it covers every write finished
    /// before the call.
    func ticket() -> Ticket {
        condition.lock()
        defer { condition.unlock() }
        return started + 1
    }

    /// Returns once sync `ticket` has completed, running it here if no sync is running. Throws
    /// if that sync, or one after it, failed: the writes are then not known to be durable.
    func wait(for ticket: Ticket) throws(StoreError) {
        condition.lock()
        while completed < ticket {
            if started > completed {
                condition.wait()
                continue
            }
            started += 1
            let sync = started
            condition.unlock()
            var failure: StoreError?
            do throws(StoreError) { try flush() } catch { failure = error }
            condition.lock()
            completed = sync
            if let failure { lastFailure = (sync, failure) }
            condition.broadcast()
        }
        let failure = lastFailure.flatMap { $0.sync >= ticket ? $0.error : nil }
        condition.unlock()
        if let failure { throw failure }
    }

    /// Makes every write finished before this call durable.
    func sync() throws(StoreError) {
        try wait(for: ticket())
    }

    /// Syncs run so far.
    var syncs: Ticket {
        condition.lock()
        defer { condition.unlock() }
        return completed
    }
}

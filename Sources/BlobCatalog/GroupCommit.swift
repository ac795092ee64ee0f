import BlobCore
import Dispatch
import Synchronization

/// Group commit over any `BlobIndex`: concurrent commits share one transaction (one WAL flush).
/// The caller that finds no batch running commits everything queued, in order
/// (`BlobIndex.commit(_:)`), and calls their completions; if more has been queued meanwhile,
/// the next batch runs on the group commit's own thread. The others return at once: nobody
/// sleeps waiting for a batch, and no thread needs waking when it is done.
public final class GroupCommit: Sendable {
    private let index: any BlobIndex
    /// Runs before each batch's transaction with the batch's records: where the store makes
    /// durable what every commit of the batch needs once (the folders of their files). A
    /// failure fails the whole batch.
    private let beforeBatch: @Sendable ([BlobRecord]) throws(StoreError) -> Void
    private let state = Mutex((queue: [Waiting](), running: false))
    /// Runs the batches queued while one ran (one at a time, so one thread).
    private let continuation = BlockingPool(name: "blobd-group-commit", threads: 1)
    /// Where a commit's events read their time.
    private let clock: WallClock

    /// Group commit into `index`, calling `beforeBatch` with each batch's records first.
    public init(_ index: any BlobIndex, clock: WallClock = .system,
                beforeBatch: @escaping @Sendable ([BlobRecord]) throws(StoreError) -> Void = { _ in }) {
        self.index = index
        self.clock = clock
        self.beforeBatch = beforeBatch
    }

    /// Stores `record` at its key if `condition` holds, as one request of a batch (see
    /// `BlobIndex.commit(_:)`), marking the resumable upload `completingUpload` (if any) complete.
    /// Calls `completion` once the outcome is durable, on whichever thread committed the batch
    /// (maybe before returning); it must not block.
    public func commit(_ record: BlobRecord, completingUpload: String? = nil, if condition: WriteCondition,
                       events: EventDraft? = nil, then completion: @escaping (Result<IndexCommit, StoreError>) -> Void) {
        let request = CommitRequest(record, completingUpload: completingUpload, if: condition, events: events, clock: clock)
        let waiting = Waiting(request, completion)
        let runs = state.withLock { state in
            state.queue.append(waiting)
            defer { state.running = true }
            return !state.running
        }
        if runs { runBatch() }
    }

    private func runBatch() {
        let batch = state.withLock { $0.queue.removeAllReturning() }
        let results = outcomes(of: batch.map(\.request))
        for (waiting, result) in zip(batch, results) { waiting.completion(result) }
        index.batchAnswered()
        let more = state.withLock { state in
            state.running = !state.queue.isEmpty
            return state.running
        }
        if more { continuation.submit { self.runBatch() } }
    }

    /// One outcome per request: the index's, or its failure for every request.
    private func outcomes(of batch: [CommitRequest]) -> [Result<IndexCommit, StoreError>] {
        do throws(StoreError) {
            try beforeBatch(batch.map(\.record))
            let results = try index.commit(batch)
            guard results.count == batch.count else {
                throw .index(.failed("the catalog answered \(results.count) of \(batch.count) commits"))
            }
            return results
        } catch {
            return Array(repeating: .failure(error), count: batch.count)
        }
    }
}

/// A commit waiting in a group commit with its completion. `@unchecked Sendable`: it is handed
/// from the thread that queued it to the one that commits its batch, and touched by one thread
/// at a time.
private final class Waiting: @unchecked Sendable {
    let request: CommitRequest
    let completion: (Result<IndexCommit, StoreError>) -> Void

    init(_ request: CommitRequest, _ completion: @escaping (Result<IndexCommit, StoreError>) -> Void) {
        self.request = request
        self.completion = completion
    }
}

extension Array {
    /// Empties the array and returns what it held.
    package mutating func removeAllReturning() -> [Element] {
        defer { removeAll() }
        return self
    }
}

import Dispatch
import Synchronization

/// One commit waiting in a group commit. `@unchecked Sendable`: it is handed from the thread
/// that queued it to the one that commits its batch, and touched by one thread at a time.
final class CommitRequest: @unchecked Sendable {
    let record: BlobRecord
    let completingUpload: String?
    /// Dropped as soon as it has been evaluated: the caller's closure must not outlive its use.
    var condition: ((BlobRecord?) -> Bool)?
    var result: Result<IndexCommit, StoreError> = .failure(.index(.failed("not committed")))
    let completion: (Result<IndexCommit, StoreError>) -> Void

    init(record: BlobRecord, completingUpload: String?, condition: @escaping (BlobRecord?) -> Bool,
         completion: @escaping (Result<IndexCommit, StoreError>) -> Void) {
        self.record = record
        self.completingUpload = completingUpload
        self.condition = condition
        self.completion = completion
    }

    /// Evaluates the condition once against `current`, and lets go of it.
    func conditionHolds(for current: BlobRecord?) -> Bool {
        defer { condition = nil }
        return condition?(current) ?? false
    }
}

/// Group commit: concurrent commits share one transaction (one WAL flush). The caller that
/// finds no batch running commits everything queued, in order, and calls their completions; if
/// more has been queued meanwhile, the next batch runs on the group commit's own thread. The others return
/// at once: nobody sleeps waiting for a batch, and no thread needs waking when it is done.
final class GroupCommit: Sendable {
    private let state = Mutex((queue: [CommitRequest](), running: false))
    /// Runs the batches queued while one ran (one at a time, so one thread).
    private let continuation = BlockingPool(name: "blobd-group-commit", threads: 1)

    /// Queues `request`. `commitBatch` commits a batch, setting every request's `result`;
    /// `afterBatch` runs after each batch's completions (SQLite checkpoints there). Every
    /// caller passes the same two.
    func submit(_ request: CommitRequest, commitBatch: @escaping @Sendable ([CommitRequest]) -> Void,
                afterBatch: @escaping @Sendable () -> Void = {}) {
        let runs = state.withLock { state in
            state.queue.append(request)
            defer { state.running = true }
            return !state.running
        }
        if runs { runBatch(commitBatch, afterBatch) }
    }

    private func runBatch(_ commitBatch: @escaping @Sendable ([CommitRequest]) -> Void, _ afterBatch: @escaping @Sendable () -> Void) {
        let batch = state.withLock { $0.queue.removeAllReturning() }
        commitBatch(batch)
        for request in batch {
            request.condition = nil
            request.completion(request.result)
        }
        afterBatch()
        let more = state.withLock { state in
            state.running = !state.queue.isEmpty
            return state.running
        }
        if more { continuation.submit { self.runBatch(commitBatch, afterBatch) } }
    }
}

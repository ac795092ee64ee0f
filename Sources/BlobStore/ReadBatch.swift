import Dispatch
import Synchronization

/// Point reads of one node that arrive together share one round trip to the index.
///
/// A read queues its key. While fewer than `maxInFlight` batches run, a batch starts on the
/// batch pool (one thread per batch in flight): it takes every key queued, fetches them in one
/// statement and hands each reader its row; when it ends, it runs the next batch if reads
/// queued meanwhile. An idle node thus reads in one round trip, and a busy one needs one round trip per batch instead of one
/// per read. No HTTP worker thread waits for the index: a GET suspends its connection until
/// its row arrives.
///
/// This is not a cache: every batch runs its statement after each of its readers arrived, so a
/// read sees every commit acknowledged before it began, as a read of its own would.
final class ReadBatch: Sendable {
    private typealias Completion = @Sendable (Result<BlobRecord?, StoreError>) -> Void

    private let state = Mutex((queue: [(key: BlobKey, completion: Completion)](), inFlight: 0))
    private let maxInFlight: Int
    private let pool: BlockingPool
    /// Reads `keys` (distinct) in one statement: the records found, by key.
    private let fetch: @Sendable ([BlobKey]) throws(StoreError) -> [BlobKey: BlobRecord]

    init(maxInFlight: Int, fetch: @escaping @Sendable ([BlobKey]) throws(StoreError) -> [BlobKey: BlobRecord]) {
        self.maxInFlight = max(1, maxInFlight)
        self.pool = BlockingPool(name: "blobd-read-batch", threads: self.maxInFlight)
        self.fetch = fetch
    }

    /// Hands `completion` the record of `key`, read by a batch that started after this call,
    /// on the batch's thread.
    func record(for key: BlobKey, then completion: @escaping @Sendable (Result<BlobRecord?, StoreError>) -> Void) {
        let starts = state.withLock { state in
            state.queue.append((key, completion))
            guard state.inFlight < maxInFlight else { return false }
            state.inFlight += 1
            return true
        }
        if starts {
            pool.submit { self.run() }
        }
    }

    /// The record of `key`, read by a batch that started after this call did; waits for it.
    func record(for key: BlobKey) throws(StoreError) -> BlobRecord? {
        let answer = Mutex<Result<BlobRecord?, StoreError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        record(for: key) { result in
            answer.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return try answer.withLock { $0 }?.get()
    }

    /// Runs batches until none is queued, then gives up its slot.
    private func run() {
        while true {
            let batch = state.withLock { state in
                if state.queue.isEmpty { state.inFlight -= 1 }
                return state.queue.removeAllReturning()
            }
            guard !batch.isEmpty else { return }
            let result: Result<[BlobKey: BlobRecord], StoreError>
            do {
                result = .success(try fetch(Array(Set(batch.map(\.key)))))
            } catch {
                result = .failure(error)
            }
            for reader in batch {
                reader.completion(result.map { $0[reader.key] })
            }
        }
    }
}

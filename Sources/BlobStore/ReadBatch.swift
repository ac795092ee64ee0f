import Dispatch
import Synchronization

/// Point reads of one node that arrive together share one round trip to the index.
///
/// A reader that finds fewer than `maxInFlight` batches running leads a batch at once: it takes
/// its own key and every key queued, fetches them in one statement and hands each reader its
/// row. The others queue; when a batch ends, its leader promotes the first queued reader to
/// lead the next batch, which takes everything queued by then. An idle node thus reads as
/// before, in one round trip, and a busy one needs one round trip per batch instead of one per
/// read.
///
/// This is not a cache: every batch runs its statement after each of its readers arrived, so a
/// read sees every commit acknowledged before it began, as a read of its own would.
final class ReadBatch: Sendable {
    /// One reader: its key, then its answer. `@unchecked Sendable`: written by the leader
    /// before `done` is signalled, read by the reader after it returns from waiting.
    private final class Reader: @unchecked Sendable {
        let key: BlobKey
        var result: Result<BlobRecord?, StoreError> = .failure(.index(.failed("not read")))
        var leads = false
        let done = DispatchSemaphore(value: 0)

        init(key: BlobKey) { self.key = key }
    }

    private let state = Mutex((queue: [Reader](), inFlight: 0))
    private let maxInFlight: Int
    /// Reads `keys` (distinct) in one statement: the records found, by key.
    private let fetch: @Sendable ([BlobKey]) throws(StoreError) -> [BlobKey: BlobRecord]

    init(maxInFlight: Int, fetch: @escaping @Sendable ([BlobKey]) throws(StoreError) -> [BlobKey: BlobRecord]) {
        self.maxInFlight = max(1, maxInFlight)
        self.fetch = fetch
    }

    /// The record of `key`, read by a batch that started after this call did.
    func record(for key: BlobKey) throws(StoreError) -> BlobRecord? {
        let reader = Reader(key: key)
        let leads = state.withLock { state in
            guard state.inFlight < maxInFlight else {
                state.queue.append(reader)
                return false
            }
            state.inFlight += 1
            return true
        }
        if !leads {
            reader.done.wait()
        }
        if leads || reader.leads {
            lead(reader)
        }
        return try reader.result.get()
    }

    /// Runs one batch led by `leader`, then hands the lead on (or gives up its slot).
    private func lead(_ leader: Reader) {
        let batch = [leader] + state.withLock { $0.queue.removeAllReturning() }
        let result: Result<[BlobKey: BlobRecord], StoreError>
        do {
            result = .success(try fetch(Array(Set(batch.map(\.key)))))
        } catch {
            result = .failure(error)
        }
        let next = state.withLock { state -> Reader? in
            guard !state.queue.isEmpty else {
                state.inFlight -= 1
                return nil
            }
            return state.queue.removeFirst()
        }
        for reader in batch {
            reader.result = result.map { $0[reader.key] }
            if reader !== leader { reader.done.signal() }
        }
        if let next {
            next.leads = true
            next.done.signal()
        }
    }
}

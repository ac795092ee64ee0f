import Foundation
import Synchronization

/// The one pool type for blocking work: a fixed set of threads taking work in order, and a
/// shutdown that drains. Which work runs where:
///
/// - the commit pools (`BlobService` and `S3Service`, one each): a request's fdatasync, folder
///   fsync and index commit, and S3 copies, off libmicrohttpd's few worker threads; drained at
///   shutdown, after the listeners stop;
/// - each `GroupCommit`'s pool (one thread): the next batch of commits queued while one ran;
/// - `ReadBatch`'s pool (one thread per batch in flight): PostgreSQL point reads;
/// - the store's `background` (one thread): a bucket's expiry restamp after a lifecycle change;
/// - event delivery's catalog thread.
///
/// Not pool work, each a loop of its own: the log flusher (`LogOutput`), the connection
/// watchdog, the periodic tasks (`PeriodicTask`: key poll, sweeps), the delivery loop, and
/// `BodyHasher`'s second thread, which hashes one upload's buffers in order and ends with the
/// request.
public final class BlockingPool: Sendable {
    private let core: Core

    /// Starts `threads` threads named `name-N`.
    public init(name: String, threads: Int) {
        core = Core(threads: max(1, threads))
        for index in 0..<core.threads {
            let thread = Thread { [core] in core.serve() }
            thread.name = "\(name)-\(index)"
            thread.stackSize = 256 * 1024
            thread.start()
        }
    }

    deinit { core.shutdown() }

    /// Runs `work` on one of the threads; after `shutdown()`, on the caller's thread.
    public func submit(_ work: @escaping @Sendable () -> Void) {
        if !core.enqueue(work) { work() }
    }

    /// Takes no more work, runs what is queued, and waits for the threads to end (except the
    /// calling thread, when it is one of them), for at most `seconds` when given: false if the
    /// work was not done by then (it goes on). Only the first call waits.
    @discardableResult
    public func shutdown(waitingAtMost seconds: Double? = nil) -> Bool {
        core.shutdown(waitingAtMost: seconds)
    }

    /// The queue and the threads serving it; kept apart from the pool, so that the threads do
    /// not keep the pool alive and dropping the pool ends them.
    private final class Core: Sendable {
        let threads: Int
        private let state = Mutex((queue: [@Sendable () -> Void](), stopping: false, running: [pthread_t]()))
        private let available = DispatchSemaphore(value: 0)
        private let ended = DispatchSemaphore(value: 0)

        init(threads: Int) {
            self.threads = threads
        }

        func enqueue(_ work: @escaping @Sendable () -> Void) -> Bool {
            let queued = state.withLock { state in
                guard !state.stopping else { return false }
                state.queue.append(work)
                return true
            }
            if queued { available.signal() }
            return queued
        }

        func serve() {
            state.withLock { $0.running.append(pthread_self()) }
            while true {
                available.wait()
                let next = state.withLock { state -> (@Sendable () -> Void)?? in
                    if !state.queue.isEmpty { return state.queue.removeFirst() }
                    return state.stopping ? .some(nil) : nil
                }
                guard let work = next else { continue }  // a wake-up whose work another thread took
                guard let work else { break }  // stopping, and nothing left
                work()
            }
            ended.signal()
        }

        func shutdown(waitingAtMost seconds: Double? = nil) -> Bool {
            let (first, isOwnThread) = state.withLock { state in
                defer { state.stopping = true }
                return (!state.stopping, state.running.contains { pthread_equal($0, pthread_self()) != 0 })
            }
            guard first else { return true }
            for _ in 0..<threads { available.signal() }
            let deadline = seconds.map { DispatchTime.now() + max(0, $0) } ?? .distantFuture
            for _ in 0..<(isOwnThread ? threads - 1 : threads) {
                if ended.wait(timeout: deadline) == .timedOut { return false }
            }
            return true
        }
    }
}

import BlobStore
import Foundation
import Synchronization
import Testing

@Suite struct BlockingPoolTests {
    /// Shutdown runs every piece of work queued before it, then the threads end.
    @Test func shutdownDrainsQueuedWork() {
        let pool = BlockingPool(name: "test-pool", threads: 2)
        let done = Mutex<[Int]>([])
        for index in 0..<20 {
            pool.submit {
                usleep(2_000)
                done.withLock { $0.append(index) }
            }
        }
        #expect(pool.shutdown())
        #expect(done.withLock { $0.sorted() } == Array(0..<20))
    }

    /// Work given after shutdown runs on the caller's thread: none is lost.
    @Test func workAfterShutdownRunsOnTheCaller() {
        let pool = BlockingPool(name: "test-pool", threads: 1)
        #expect(pool.shutdown())
        let ran = Mutex(false)
        pool.submit { ran.withLock { $0 = true } }
        #expect(ran.withLock { $0 })
    }

    /// A bounded shutdown returns false when the work outlasts it, and the work still finishes.
    @Test func boundedShutdownGivesUpOnLongWork() {
        let pool = BlockingPool(name: "test-pool", threads: 1)
        let finished = DispatchSemaphore(value: 0)
        pool.submit {
            usleep(300_000)
            finished.signal()
        }
        usleep(20_000)
        #expect(!pool.shutdown(waitingAtMost: 0.05))
        #expect(finished.wait(timeout: .now() + 5) == .success)
    }

    /// A pool dropped by its own work (the last reference let go on one of its threads) ends
    /// without waiting for itself.
    @Test func aPoolDroppedOnItsOwnThreadEnds() {
        final class Holder: @unchecked Sendable { var pool: BlockingPool? }
        let holder = Holder()
        holder.pool = BlockingPool(name: "test-pool", threads: 1)
        let done = DispatchSemaphore(value: 0)
        holder.pool?.submit {
            holder.pool = nil
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 5) == .success)
    }
}

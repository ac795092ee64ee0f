import Foundation
import Synchronization

/// A fixed set of threads for blocking work (fsync, index commits), so that libmicrohttpd's
/// few worker threads keep serving while uploads are made durable, and many fsyncs overlap.
public final class WorkerPool: Sendable {
    private let queue = Mutex<[@Sendable () -> Void]>([])
    private let available = DispatchSemaphore(value: 0)

    /// Starts `threads` threads that live as long as the process.
    public init(threads: Int) {
        for index in 0..<max(1, threads) {
            let thread = Thread { [self] in self.serve() }
            thread.name = "blobd-commit-\(index)"
            thread.stackSize = 256 * 1024
            thread.start()
        }
    }

    /// Runs `work` on one of the threads.
    public func submit(_ work: @escaping @Sendable () -> Void) {
        queue.withLock { $0.append(work) }
        available.signal()
    }

    private func serve() {
        while true {
            available.wait()
            guard let work = queue.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { continue }
            work()
        }
    }
}

/// Hands a value to exactly one other thread. `@unchecked Sendable` is sound only when the
/// sender no longer touches the value after handing it over.
public struct Handover<Value>: @unchecked Sendable {
    public let value: Value
    public init(value: Value) { self.value = value }
}

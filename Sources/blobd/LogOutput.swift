import Foundation
import Synchronization

/// Log lines on their way to stderr, written in batches: one write(2) per half second (or per
/// 64 KiB) instead of one per line, which cost a busy server 30–40 % of its read throughput.
/// Warnings and worse are written at once. `flush()` at shutdown, so SIGTERM loses no line;
/// a kill -9 loses at most the last half second.
final class LogOutput: Sendable {
    /// Standard error, flushed by a background thread every `interval` seconds.
    static let standardError = LogOutput(descriptor: 2)

    static let interval = 0.5
    static let batchBytes = 64 * 1024

    private let descriptor: Int32
    private let pending = Mutex<[UInt8]>([])

    private init(descriptor: Int32) {
        self.descriptor = descriptor
        let flusher = Thread { [self] in
            while true {
                Thread.sleep(forTimeInterval: Self.interval)
                flush()
            }
        }
        flusher.name = "blobd-log-flush"
        flusher.stackSize = 64 * 1024
        flusher.start()
    }

    /// Queues one line (with its newline); writes everything queued at once when `urgent` or
    /// when the batch is full.
    func write(_ line: [UInt8], urgent: Bool) {
        pending.withLock { pending in
            pending += line
            if urgent || pending.count >= Self.batchBytes { writeOut(&pending) }
        }
    }

    /// Writes everything queued.
    func flush() {
        pending.withLock { writeOut(&$0) }
    }

    /// Under the lock, so lines keep their order.
    private func writeOut(_ pending: inout [UInt8]) {
        guard !pending.isEmpty else { return }
        pending.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(descriptor, bytes.baseAddress.map { $0 + offset }, bytes.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else {
                    break  // stderr is gone: drop the lines rather than block the server
                }
            }
        }
        pending.removeAll(keepingCapacity: pending.count <= 2 * Self.batchBytes)
    }
}

import Foundation
import Synchronization

/// Log lines on their way to stderr, written in batches: one write(2) per half second (or per
/// 64 KiB) instead of one per line, which cost a busy server 30–40 % of its read throughput.
/// Writers only append under a lock; the write(2) happens on the flusher thread (or, past
/// `backlogBytes`, on the writer, so a stalled stderr slows the server instead of growing
/// memory). Warnings and worse are written at once. `flush()` at shutdown, so SIGTERM loses no
/// line; a kill -9 loses at most the last half second.
public final class LogOutput: Sendable {
    /// Standard error, flushed by a background thread every `interval` seconds.
    public static let standardError = LogOutput(descriptor: 2)

    static let interval = 0.5
    static let batchBytes = 64 * 1024
    static let backlogBytes = 8 * 1024 * 1024

    private let descriptor: Int32
    private let pending = Mutex<[UInt8]>([])
    /// Held while a batch is taken and written, so batches go out in order.
    private let writing = Mutex(())
    private let wake = DispatchSemaphore(value: 0)

    private init(descriptor: Int32) {
        self.descriptor = descriptor
        let flusher = Thread { [self] in
            while true {
                _ = wake.wait(timeout: .now() + Self.interval)
                flush()
            }
        }
        flusher.name = "blobd-log-flush"
        flusher.stackSize = 64 * 1024
        flusher.start()
    }

    /// Queues one line (with its newline); with `urgent`, writes everything queued at once.
    public func write(_ line: [UInt8], urgent: Bool) {
        let queued = pending.withLock { pending in
            pending += line
            return pending.count
        }
        if urgent || queued >= Self.backlogBytes {
            flush()
        } else if queued >= Self.batchBytes && queued - line.count < Self.batchBytes {
            wake.signal()
        }
    }

    /// Writes everything queued.
    public func flush() {
        writing.withLock { _ in
            var batch = pending.withLock { pending in
                defer { pending.removeAll(keepingCapacity: true) }
                return pending
            }
            writeOut(&batch)
        }
    }

    private func writeOut(_ batch: inout [UInt8]) {
        guard !batch.isEmpty else { return }
        batch.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(descriptor, bytes.baseAddress.map { $0 + offset }, bytes.count - offset)
                if written > 0 {
                    offset += written
                } else if written < 0 && errno == EINTR {
                    continue
                } else if written < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                    // A non-blocking stderr (a pipe its reader made so) is full: wait for room,
                    // up to a second at a time, rather than drop lines.
                    var ready = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                    if poll(&ready, 1, 1000) <= 0 { break }
                } else {
                    break  // stderr is gone: drop the lines rather than block the server
                }
            }
        }
    }
}

/// The current time as a log timestamp, `2026-11-22T20:04:44.123Z` (UTC).
public enum LogTimestamp {
    /// The current time, UTC, with milliseconds.
    public static func now() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(24)
        append(to: &out)
        return out
    }

    /// Appends the current time to `out`.
    public static func append(to out: inout [UInt8]) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        HTTPDate.appendLogTimestamp(seconds: Int64(now.tv_sec), milliseconds: now.tv_nsec / 1_000_000, to: &out)
    }
}

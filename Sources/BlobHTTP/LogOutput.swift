import Foundation
import Synchronization

/// Log lines on their way to stderr, written in batches: one write(2) per half second (or per
/// 64 KiB) instead of one per line, which cost a busy server 30–40 % of its read throughput.
/// Warnings and worse are written at once. `flush()` at shutdown, so SIGTERM loses no line;
/// a kill -9 loses at most the last half second.
public final class LogOutput: Sendable {
    /// Standard error, flushed by a background thread every `interval` seconds.
    public static let standardError = LogOutput(descriptor: 2)

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
    public func write(_ line: [UInt8], urgent: Bool) {
        pending.withLock { pending in
            pending += line
            if urgent || pending.count >= Self.batchBytes { writeOut(&pending) }
        }
    }

    /// Writes everything queued.
    public func flush() {
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

/// `2026-11-22T20:04:44.123Z`: the date and time are formatted once per second.
public enum LogTimestamp {
    private static let cache = Mutex<(second: Int, text: [UInt8])>((-1, []))

    /// The current time, UTC, with milliseconds.
    public static func now() -> [UInt8] {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let second = now.tv_sec
        var text = cache.withLock { $0.second == second ? $0.text : [] }
        if text.isEmpty {
            var fields = tm()
            var seconds = second
            gmtime_r(&seconds, &fields)
            text = Array(String(format: "%04d-%02d-%02dT%02d:%02d:%02d", fields.tm_year + 1900, fields.tm_mon + 1,
                                fields.tm_mday, fields.tm_hour, fields.tm_min, fields.tm_sec).utf8)
            cache.withLock { $0 = (second, text) }
        }
        let millis = now.tv_nsec / 1_000_000
        text += [UInt8(ascii: "."), UInt8(48 + millis / 100), UInt8(48 + millis / 10 % 10), UInt8(48 + millis % 10), UInt8(ascii: "Z")]
        return text
    }
}

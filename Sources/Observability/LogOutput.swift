import BlobStore
import Foundation
import Services
import Synchronization
import SystemCalls

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
    /// Set by `stop`: the flusher writes what is queued and ends; later lines are written at once.
    private let stopped = Atomic<Bool>(false)
    private let flusherEnded = DispatchSemaphore(value: 0)

    private init(descriptor: Int32) {
        self.descriptor = descriptor
        let flusher = Thread { [self] in
            defer { flusherEnded.signal() }
            while !stopped.load(ordering: .acquiring) {
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
        if urgent || queued >= Self.backlogBytes || stopped.load(ordering: .relaxed) {
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
                // EBADF: a parent that closed our stderr; the lines are dropped below.
                let written = SystemCall.run("write", badDescriptorIsFatal: false) {
                    Glibc.write(descriptor, bytes.baseAddress.map { $0 + offset }, bytes.count - offset)
                }
                if written > 0 {
                    offset += written
                } else if written < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                    // A non-blocking stderr (a pipe its reader made so) is full: wait for room,
                    // up to a second at a time, rather than drop lines.
                    var ready = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                    if SystemCall.run("poll", { poll(&ready, 1, 1000) }) <= 0 { break }
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

/// Text-format log values that no client can use to forge a line (CWE-117).
public enum LogText {
    /// Appends `value` as a `key=value` value: as it is when it holds only printable characters
    /// other than space, `"`, `=` and `\`; else in double quotes, with `"` and `\` escaped,
    /// `\n`, `\r`, `\t`, and any other control character (C0, DEL, C1, U+2028, U+2029) as
    /// `\u{…}`.
    public static func appendValue(_ value: String, to out: inout [UInt8]) {
        let plain = !value.isEmpty && value.unicodeScalars.allSatisfy { !needsQuotes($0) }
        guard !plain else {
            out += value.utf8
            return
        }
        out.append(UInt8(ascii: "\""))
        appendEscaped(value, to: &out)
        out.append(UInt8(ascii: "\""))
    }

    /// Appends `text` (a message) with control characters, `"` and `\` escaped, unquoted.
    public static func appendEscaped(_ text: String, to out: inout [UInt8]) {
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += #"\""#.utf8
            case "\\": out += #"\\"#.utf8
            case "\n": out += #"\n"#.utf8
            case "\r": out += #"\r"#.utf8
            case "\t": out += #"\t"#.utf8
            default:
                if isControl(scalar) {
                    out += "\\u{\(String(scalar.value, radix: 16))}".utf8
                } else {
                    out += String(scalar).utf8
                }
            }
        }
    }

    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029
    }

    static func needsQuotes(_ scalar: Unicode.Scalar) -> Bool {
        isControl(scalar) || scalar == " " || scalar == "\"" || scalar == "=" || scalar == "\\"
    }
}

extension LogOutput: Service {
    public var name: String { "blobd-log-flush" }

    /// The flusher runs from the first line on.
    public func start() {}

    /// Writes what is queued and ends the flusher; every later line is written at once.
    public func stop(before deadline: ContinuousClock.Instant) {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        wake.signal()
        flusherEnded.wait()
        flush()
    }
}

import ArgumentParser
import BlobStore
import Foundation
import Synchronization

/// Shows how far a long command (fsck, migrate-index) has come: on a terminal, one line
/// redrawn a few times a second; otherwise a log line every few seconds. Both give blobs and
/// bytes done out of the total, the rate and the time left.
final class ProgressReporter {
    private let what: String
    private let isTerminal = isatty(STDERR_FILENO) == 1
    private let started = Date()
    private var lastShown = Date.distantPast
    private var shownOnTerminal = false
    /// Seconds between log lines when not on a terminal (`Configuration.progressInterval`).
    private let logInterval: Double

    init(_ what: String, logInterval: Double) {
        self.what = what
        self.logInterval = logInterval
    }

    /// Called after every item; shows at most every 0.2 s (terminal) or 5 s (log).
    func update(_ progress: WorkProgress) {
        let now = Date()
        guard now.timeIntervalSince(lastShown) >= (isTerminal ? 0.2 : logInterval) else { return }
        lastShown = now
        let line = describe(progress, at: now)
        if isTerminal {
            FileHandle.standardError.write(Data(("\r\u{1B}[K" + line).utf8))
            shownOnTerminal = true
        } else {
            FileHandle.standardError.write(Data((ISO8601DateFormatter().string(from: now) + " " + line + "\n").utf8))
        }
    }

    /// Ends the progress line (on a terminal) before the summary is printed.
    func finish() {
        if shownOnTerminal { FileHandle.standardError.write(Data("\n".utf8)) }
    }

    func describe(_ progress: WorkProgress, at now: Date = Date()) -> String {
        let seconds = max(now.timeIntervalSince(started), 0.001)
        let rate = Double(progress.bytesDone) / seconds
        var line = "\(what): \(progress.done)/\(progress.total) blobs, \(Self.bytes(progress.bytesDone))/\(Self.bytes(progress.bytesTotal))"
        line += String(format: ", %.1f MB/s, %.0f blobs/s", rate / 1e6, Double(progress.done) / seconds)
        let left = progress.bytesTotal > progress.bytesDone && rate > 0
            ? Double(progress.bytesTotal - progress.bytesDone) / rate
            : Double(max(0, progress.total - progress.done)) / max(Double(progress.done) / seconds, 0.001)
        line += ", ETA " + Self.duration(left)
        return line
    }

    static func bytes(_ count: UInt64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count), unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) B" : String(format: "%.1f %@", value, units[unit])
    }

    static func duration(_ seconds: Double) -> String {
        let total = Int(seconds.rounded())
        if total >= 3600 { return "\(total / 3600)h\(String(format: "%02d", total % 3600 / 60))m" }
        if total >= 60 { return "\(total / 60)m\(String(format: "%02d", total % 60))s" }
        return "\(total)s"
    }
}

/// Runs the work of long command `name` (fsck, migrate-index): Ctrl-C and SIGTERM ask it to
/// stop (`shouldStop`), its progress shows on stderr and is ended before anything else is
/// printed. A failure is one line, `blobd NAME: …` (`context` after the error), and exit 2;
/// a data directory held by a running blobd is said so.
func runLongCommand<Report>(_ name: String, _ configuration: Configuration, context: String = "",
                            _ work: (_ progress: @escaping (WorkProgress) -> Void,
                                     _ shouldStop: @escaping () -> Bool) throws -> Report) throws -> Report {
    stopOnInterrupt()
    let progress = ProgressReporter(name, logInterval: configuration.progressInterval)
    do {
        defer { progress.finish() }
        return try work(progress.update, { interruptRequested.load(ordering: .relaxed) })
    } catch StoreError.dataDirectoryLocked(let path) {
        printError("blobd \(name): the data directory \(path) is in use by a running blobd; stop it first")
        throw ExitCode(2)
    } catch {
        printError("blobd \(name): \(error)\(context)")
        throw ExitCode(2)
    }
}

/// Set by SIGINT (Ctrl-C) while a long command runs: it stops at the next item and reports.
let interruptRequested = Atomic<Bool>(false)

/// Makes Ctrl-C (and SIGTERM) ask a long command to stop cleanly instead of killing it.
func stopOnInterrupt() {
    for signalNumber in [SIGINT, SIGTERM] {
        signal(signalNumber) { _ in interruptRequested.store(true, ordering: .relaxed) }
    }
    // A parent may have started this process with them blocked (the mask is inherited).
    var signals = signalSet([SIGINT, SIGTERM])
    pthread_sigmask(SIG_UNBLOCK, &signals, nil)
}

/// The set of signals `numbers`, for pthread_sigmask and sigwait.
func signalSet(_ numbers: [Int32]) -> sigset_t {
    var set = sigset_t()
    sigemptyset(&set)
    for number in numbers { sigaddset(&set, number) }
    return set
}

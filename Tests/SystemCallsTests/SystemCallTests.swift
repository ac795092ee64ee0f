import Foundation
import Synchronization
import SystemCalls
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Signals the interrupting thread's handler caught.
private let caughtSignals = Atomic<Int>(0)

@Suite struct SystemCallTests {
    @Test func retriesEINTRUntilTheCallSucceeds() {
        var calls = 0
        let result = SystemCall.run("test") { () -> Int32 in
            calls += 1
            if calls < 3 {
                errno = EINTR
                return -1
            }
            return 7
        }
        #expect(result == 7)
        #expect(calls == 3)
    }

    @Test func returnsOtherFailuresWithTheirErrno() {
        var calls = 0
        let result = SystemCall.run("test") { () -> Int32 in
            calls += 1
            errno = ENOSPC
            return -1
        }
        #expect(result == -1)
        #expect(errno == ENOSPC)
        #expect(calls == 1)
        #expect(throws: Errno(ENOENT)) { try FileDescriptor.open("/nonexistent/blobd-test", O_RDONLY) }
    }

    /// A read blocked on an empty pipe is interrupted by a signal whose handler is installed
    /// without SA_RESTART (so the kernel fails the read with EINTR); the wrapper reads again
    /// and returns the bytes written after the signal.
    @Test func aReadInterruptedBySignalsGoesOn() throws {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in caughtSignals.add(1, ordering: .relaxed) }
        action.sa_flags = 0  // no SA_RESTART
        sigemptyset(&action.sa_mask)
        var previous = sigaction()
        #expect(sigaction(SIGUSR1, &action, &previous) == 0)
        defer { sigaction(SIGUSR1, &previous, nil) }

        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        let (reader, writer) = (FileDescriptor(rawValue: ends[0]), FileDescriptor(rawValue: ends[1]))
        defer { reader.close(); writer.close() }

        let job = ReadJob(reader: reader)
        let thread = Thread { job.run() }
        thread.start()
        var waited = 0
        while job.thread.load(ordering: .acquiring) == 0 && waited < 5000 {
            usleep(1000)
            waited += 1
        }
        let target = pthread_t(job.thread.load(ordering: .acquiring))
        let before = caughtSignals.load(ordering: .relaxed)
        for _ in 0..<5 {
            usleep(20_000)  // the reader is blocked in read(2) by now
            #expect(pthread_kill(target, SIGUSR1) == 0)
        }
        usleep(20_000)
        #expect(caughtSignals.load(ordering: .relaxed) - before == 5)
        let bytes: [UInt8] = [1, 2, 3]
        try bytes.withUnsafeBytes { try writer.writeAll($0) }
        job.done.wait()
        #expect(job.result.withLock { $0 } == [1, 2, 3])
    }

    /// A descriptor that is not open is a bug in blobd: the process stops, with the reason on
    /// stderr, rather than the call failing with an error a request would turn into a 500.
    /// Reaps children that earlier tests left exited but unreaped: Swift Testing's exit-test
    /// monitor waits for any child of the test process, and a stray zombie kept it from ever
    /// seeing its own (the suite hung). `make test` runs tests one at a time, so no other test's
    /// child is running now.
    static func reapStrayChildren() {
        var status: Int32 = 0
        while waitpid(-1, &status, WNOHANG) > 0 {}
    }

    @Test func aClosedDescriptorStopsTheProcess() async {
        Self.reapStrayChildren()
        await #expect(processExitsWith: .failure) {
            var ends: [Int32] = [0, 0]
            _ = pipe(&ends)
            let reader = FileDescriptor(rawValue: ends[0])
            reader.close()
            var byte: UInt8 = 0
            _ = try? withUnsafeMutableBytes(of: &byte) { try reader.read(into: $0) }
        }
    }

    @Test func aClosedDescriptorStopsTheProcessWithItsReason() async throws {
        Self.reapStrayChildren()
        let result = try await #require(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            FileDescriptor(rawValue: 1000).close()
        }
        let text = String(decoding: result.standardErrorContent, as: UTF8.self)
        #expect(text.contains("blobd: close was given a closed or reused file descriptor (EBADF)"))
    }
}

/// A read on its own thread, for the EINTR test.
private final class ReadJob: Sendable {
    let reader: FileDescriptor
    let thread = Atomic<UInt>(0)
    let result = Mutex<[UInt8]?>(nil)
    let done = DispatchSemaphore(value: 0)

    init(reader: FileDescriptor) {
        self.reader = reader
    }

    func run() {
        // The test runner's threads may block signals; this one takes SIGUSR1.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGUSR1)
        pthread_sigmask(SIG_UNBLOCK, &signals, nil)
        thread.store(UInt(pthread_self()), ordering: .releasing)
        var buffer = [UInt8](repeating: 0, count: 16)
        let count = try? buffer.withUnsafeMutableBytes { try reader.read(into: $0) }
        result.withLock { $0 = count.map { Array(buffer[..<$0]) } }
        done.signal()
    }
}

import Testing
@testable import MicroHTTPD

/// The watchdog reads the clock before it takes its lock; a worker may stamp a phase after that
/// reading, and the connection must then count as new, not as 2^64 ms old.
@Suite struct WatchdogClockTests {
    @Test func aStampAfterTheReadingIsNoAge() {
        #expect(ConnectionWatchdog.age(1_000, now: 999) == 0)
        #expect(ConnectionWatchdog.age(1_000, now: 1_000) == 0)
        #expect(ConnectionWatchdog.age(1_000, now: 11_000) == 10_000)
    }
}

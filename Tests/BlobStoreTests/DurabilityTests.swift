import Foundation
import Synchronization
import Testing
@testable import BlobStore

/// Shared syncs (`FileSystemSync`) and the order the index relies on them in: a commit's files
/// are synced before its transaction, and the transaction is synced before the commit returns.
@Suite struct DurabilityTests {
    @Test func ticketsTakenBeforeASyncStartsShareIt() throws {
        let flushes = Atomic(0)
        let sync = FileSystemSync { flushes.add(1, ordering: .relaxed) }
        let first = sync.ticket(), second = sync.ticket()
        try sync.wait(for: first)
        try sync.wait(for: second)
        #expect(flushes.load(ordering: .relaxed) == 1)
        // A write after that sync needs a new one.
        try sync.sync()
        #expect(flushes.load(ordering: .relaxed) == 2)
    }

    @Test func aTicketTakenDuringASyncWaitsForTheNextOne() async throws {
        let flushes = Atomic(0)
        let release = DispatchSemaphore(value: 0)
        let sync = FileSystemSync {
            // The first sync blocks until the test lets it finish.
            if flushes.add(1, ordering: .relaxed).newValue == 1 { release.wait() }
        }
        let running = Task.detached { try sync.sync() }
        while flushes.load(ordering: .relaxed) == 0 { try await Task.sleep(for: .milliseconds(1)) }
        let ticket = sync.ticket()  // taken while sync 1 runs: sync 1 may have missed this write
        let waiter = Task.detached { try sync.wait(for: ticket); return flushes.load(ordering: .relaxed) }
        release.signal()
        try await running.value
        #expect(try await waiter.value == 2)
    }

    @Test func aFailedSyncFailsItsWaitersOnly() throws {
        let fail = Atomic(true)
        let sync = FileSystemSync { () throws(StoreError) in
            if fail.load(ordering: .relaxed) { throw .io(operation: "syncfs", errno: EIO) }
        }
        let ticket = sync.ticket()
        #expect(throws: StoreError.io(operation: "syncfs", errno: EIO)) { try sync.wait(for: ticket) }
        fail.store(false, ordering: .relaxed)
        try sync.sync()
    }

    @Test func commitsAndRemovalsAreSyncedAfterTheirTransaction() throws {
        let dir = TempDirectory()
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        // What each sync saw in the index when it ran.
        let seen = Mutex<[Bool]>([])
        let indexBox = Mutex<SQLiteBlobIndex?>(nil)
        let sync = FileSystemSync {
            let index = indexBox.withLock { $0 }
            let present = (try? index?.containsVersion("v1")) ?? false
            seen.withLock { $0.append(present) }
        }
        let index = try SQLiteBlobIndex(path: dir.path + "/index.sqlite", fileSystem: sync)
        indexBox.withLock { $0 = index }
        let record = BlobRecord(key: try BlobKey("a"), version: "v1", size: 1, sha256: [UInt8](repeating: 0, count: 32),
                                contentType: "text/plain", modified: 0)

        #expect(try index.commit(record, completingUpload: nil, if: { _ in true }) == .created)
        // One sync before the transaction (the file), one after it (the transaction).
        #expect(seen.withLock { $0 } == [false, true])

        _ = try index.remove(record.key, if: { _ in true })
        #expect(seen.withLock { $0 } == [false, true, false])
    }
}

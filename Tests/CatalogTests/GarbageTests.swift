import Foundation
import Synchronization
import Testing
@testable import BlobStore

extension CatalogConformance {
    /// What recovery, fsck and reclaim read: versions by folder, garbage, and claims.
    @Suite struct Bookkeeping {
        /// A version in each of the 256 folders (and a second in some): `versions(inFolder:)`
        /// names exactly those of its folder, whatever the folder's last digit (a folder ending
        /// in 9 has the range up to "…:", which a locale's collation sorts before digits).
        @Test(arguments: Backend.all)
        func versionsOfEveryFolder(_ backend: Backend) throws {
            let index = try backend.open()
            var byFolder: [String: Set<String>] = [:]
            let records = try BlobRecord.folders.enumerated().flatMap { (i, folder) in
                try (0..<(i % 3 == 0 ? 2 : 1)).map { n in
                    var stored = try record("v/\(folder)/\(n)")
                    stored.version = folder + String(stored.version.dropFirst(2))
                    byFolder[folder, default: []].insert(stored.version)
                    return stored
                }
            }
            _ = concurrently(8) { slice in
                for stored in records.indices.filter({ $0 % 8 == slice }).map({ records[$0] }) { _ = try? index.put(stored) }
            }
            #expect(try index.totals().count == records.count)
            var failures: [String] = []
            for folder in BlobRecord.folders where try index.versions(inFolder: folder) != byFolder[folder] {
                failures.append(folder)
            }
            #expect(failures.isEmpty, "folders listed wrong: \(failures)")
            #expect(try index.allVersions() == Set(records.map(\.version)))
            #expect(try records.allSatisfy { try index.containsVersion($0.version) })
            #expect(try !index.containsVersion(String(repeating: "0", count: 32)) && !index.containsVersion(""))
        }

        /// Replaced and removed versions are garbage until forgotten: on a local catalog a
        /// collected version goes with the next write and `clearGarbage` forgets them all; a
        /// shared catalog keeps them for its reclaim whatever one node says.
        @Test(arguments: Backend.all)
        func garbageLifecycle(_ backend: Backend) throws {
            let index = try backend.open()
            let first = try record("g"), second = try record("g"), other = try record("h")
            try index.put(first)
            try index.put(other)
            #expect(try index.garbage().isEmpty)
            try index.put(second)
            try index.remove(other.key, when: .unconditional)
            #expect(Set(try index.garbage()) == [first.version, other.version])
            index.collectedGarbage(first.version)
            try index.put(try record("next"))
            switch backend.garbage {
            case .local:
                #expect(try index.garbage() == [other.version])
                try index.clearGarbage()
                #expect(try index.garbage().isEmpty)
                try index.put(try record("g"))
                #expect(try index.garbage() == [second.version])
            case .shared(let shared):
                #expect(Set(try index.garbage()) == [first.version, other.version])
                try index.clearGarbage()
                #expect(Set(try index.garbage()) == [first.version, other.version])
                #expect(try shared.isGarbage(index, first.version) && !shared.isGarbage(index, second.version))
            }
        }

        /// Shared garbage goes by reclaim only: nothing younger than the grace period, at most
        /// `limit` at a time, each version's `remove` called once before its row goes.
        @Test(arguments: Backend.sharedBookkeeping)
        func reclaimAfterGrace(_ backend: Backend) throws {
            guard case .shared(let shared) = backend.garbage else { return }
            let index = try backend.open()
            let replaced = try (0..<3).map { try record("r\($0)") }
            for stored in replaced {
                try index.put(stored)
                try index.put(try record(stored.key.rawValue))
            }
            let removed = Mutex<[String]>([])
            let remove: (String) -> Void = { version in removed.withLock { $0.append(version) } }
            #expect(try shared.reclaim(index, 3600, 10, remove) == 0)
            #expect(removed.withLock { $0 }.isEmpty)
            #expect(try shared.reclaim(index, 0, 2, remove) == 2)
            #expect(try shared.reclaim(index, 0, 10, remove) == 1)
            #expect(try shared.reclaim(index, 0, 10, remove) == 0)
            #expect(Set(removed.withLock { $0 }) == Set(replaced.map(\.version)) && removed.withLock { $0 }.count == 3)
            #expect(try index.garbage().isEmpty)
            #expect(try replaced.allSatisfy { try !shared.isGarbage(index, $0.version) })
        }

        /// Claims on an upload: one node at a time; the holder renews; another node's release
        /// does nothing; once released or lapsed, another node takes it.
        @Test(arguments: Backend.sharedBookkeeping)
        func claimsHoldOneNodeAtATime(_ backend: Backend) throws {
            guard case .shared(let shared) = backend.garbage else { return }
            let index = try backend.open()
            let id = newVersion(), now = Int64(time(nil))
            #expect(try shared.claim(index, id, "a", now + 60))
            #expect(try !shared.claim(index, id, "b", now + 60))
            #expect(try shared.claim(index, id, "a", now + 120))
            try shared.release(index, id, "b")
            #expect(try !shared.claim(index, id, "b", now + 60))
            try shared.release(index, id, "a")
            #expect(try shared.claim(index, id, "b", now - 1))
            // b's claim has lapsed: a takes it over.
            #expect(try shared.claim(index, id, "a", now + 60))
            #expect(try shared.claim(index, newVersion(), "b", now + 60))
        }
    }
}

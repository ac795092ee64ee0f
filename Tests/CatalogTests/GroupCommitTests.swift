import Foundation
import Testing
@testable import BlobStore
@testable import CatalogPostgres
@testable import CatalogSQLite

/// The `i`th of several records at `key` that differ in every field.
func distinctCandidate(_ key: BlobKey, _ i: Int) -> BlobRecord {
    let byte = UInt8(i & 0xFF)
    return BlobRecord(key: key, version: newVersion(), size: UInt64(i) << 20 | 7, sha256: (0..<32).map { byte &+ $0 },
                      attributes: BlobAttributes(contentType: "type/\(i)", cacheControl: "max-age=\(i)",
                                                 contentDisposition: "attachment; filename=\"\(i)\"", contentEncoding: "enc\(i)",
                                                 contentLanguage: "l\(i)", expires: "\(i)",
                                                 userMetadata: [.init(name: "n\(i)", value: "v \u{E9}\(i)")]),
                      modified: 1_700_000_000 + Int64(i), md5: (0..<16).map { byte &* 3 &+ $0 }, parts: i + 1,
                      partSizes: (0...i).map { UInt64($0) + 1 }, partChecksums: (0...i).map { "c\($0)" }, checksum: "crc32:\(i)-\(i + 1)")
}

extension CatalogConformance.Commits {
    /// Unconditional commits of distinct keys from many threads at once through a `GroupCommit`
    /// (one batch or several): every one is created and reads back exactly.
    @Test(arguments: Backend.all)
    func concurrentCommitsOfDistinctKeysAllLand(_ backend: Backend) throws {
        let index = try backend.open()
        let commits = GroupCommit(index)
        let count = 48
        let records = try (0..<count).map { distinctCandidate(try BlobKey("k/\($0)"), $0) }
        let outcomes = concurrently(count) { i in
            Result { () throws(StoreError) in try commits.commit(records[i], when: .unconditional) }
        }
        #expect(outcomes == Array(repeating: .success(.created), count: count))
        for stored in records { #expect(try index.record(for: stored.key) == stored) }
        let sorted = records.sorted { $0.key.bytes.lexicographicallyPrecedes($1.key.bytes) }
        #expect(try index.list(prefix: Array("k/".utf8), after: nil, limit: 1000) == sorted)
        #expect(try index.totals() == (count, records.reduce(0) { $0 + $1.size }))
        #expect(try index.garbage().isEmpty)
    }

    /// Unconditional commits of one key from many threads at once through a `GroupCommit`: one
    /// creates it, each other replaces exactly one earlier commit (the outcomes form a single
    /// chain, none lost or seen twice), the last one stays, and every other version is garbage.
    @Test(arguments: Backend.all)
    func concurrentCommitsOfOneKeyFormOneChain(_ backend: Backend) throws {
        let index = try backend.open()
        let commits = GroupCommit(index)
        let count = 16
        let key = try BlobKey("same")
        let candidates = (0..<count).map { distinctCandidate(key, $0) }
        let outcomes = concurrently(count) { i in
            Result { () throws(StoreError) in try commits.commit(candidates[i], when: .unconditional) }
        }
        #expect(outcomes.filter { $0 == .success(.created) }.count == 1)
        let previous = outcomes.compactMap { outcome -> BlobRecord? in
            if case .success(.replaced(let previous)) = outcome { previous } else { nil }
        }
        #expect(previous.count == count - 1)
        #expect(previous.allSatisfy { candidates.contains($0) })
        let final = try #require(try index.record(for: key))
        #expect(candidates.contains(final))
        #expect(Set(previous.map(\.version)) == Set(candidates.map(\.version)).subtracting([final.version]))
        #expect(Set(try index.garbage()) == Set(previous.map(\.version)))
    }
}

extension CatalogConformance.Commits {
    /// Keys are byte strings: canonically equivalent spellings (NFC "é", NFD "e" + U+0301, and
    /// "Å" as U+00C5 or U+212B) are distinct keys, also when committed in one batch.
    @Test(arguments: Backend.all)
    func canonicallyEquivalentKeysAreDistinct(_ backend: Backend) throws {
        let index = try backend.open()
        let commits = GroupCommit(index)
        let spellings = ["caf\u{E9}", "cafe\u{301}", "\u{C5}", "\u{212B}", "A\u{30A}"]
        let records = try spellings.enumerated().map { distinctCandidate(try BlobKey($1), $0) }
        let outcomes = concurrently(records.count) { i in
            Result { () throws(StoreError) in try commits.commit(records[i], when: .createOnly) }
        }
        #expect(outcomes == Array(repeating: .success(.created), count: records.count))
        #expect(try index.commit(records.map { CommitRequest($0, when: .createOnly) })
                == Array(repeating: .failure(.preconditionFailed), count: records.count))
        for stored in records { #expect(try index.record(for: stored.key) == stored) }
        let sorted = records.sorted { $0.key.bytes.lexicographicallyPrecedes($1.key.bytes) }
        #expect(try index.list(prefix: [], after: nil, limit: 10) == sorted)
        #expect(try index.remove(records[1].key, when: .unconditional) == records[1])
        #expect(try index.record(for: records[0].key) == records[0])
    }
}

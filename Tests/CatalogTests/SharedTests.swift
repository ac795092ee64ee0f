import Foundation
import Synchronization
import Testing
@testable import BlobStore
@testable import CatalogPostgres
@testable import CatalogSQLite

extension CatalogConformance {
    /// Races between threads of one handle (every backend) and between nodes sharing a catalog
    /// (the backends that allow it): conditions are decided inside the catalog's transaction.
    /// Each handle commits through a `GroupCommit` of its own, as each node's store does.
    @Suite struct Races {
        /// N threads replace the same version with If-Match at once: exactly one wins (no lost
        /// update), the stored record is the winner's, and the loser's versions are never garbage.
        @Test(arguments: Backend.all)
        func concurrentIfMatchHasOneWinner(_ backend: Backend) throws {
            try Self.ifMatchRace(on: [try backend.open()])
        }

        /// The same race with its threads spread over several nodes of one catalog.
        @Test(arguments: Backend.shared)
        func ifMatchAcrossNodesHasOneWinner(_ backend: Backend) throws {
            let open = try #require(backend.openNodes)
            try Self.ifMatchRace(on: try open(3))
        }

        /// Create-only commits of one key spread over several nodes: exactly one wins.
        @Test(arguments: Backend.shared)
        func createOnlyAcrossNodesHasOneWinner(_ backend: Backend) throws {
            let open = try #require(backend.openNodes)
            let nodes = try open(3)
            let commits = nodes.map { GroupCommit($0) }
            let count = 12
            for round in 0..<3 {
                let candidates = try (0..<count).map { _ in try record("race-\(round)") }
                let outcomes = concurrently(count) { i in
                    Result { () throws(StoreError) in try commits[i % nodes.count].commit(candidates[i], when: .createOnly) }
                }
                let winners = outcomes.indices.filter { outcomes[$0] == .success(.created) }
                #expect(winners.count == 1)
                #expect(outcomes.filter { $0 == .failure(.preconditionFailed) }.count == count - 1)
                for node in nodes {
                    #expect(try node.record(for: candidates[0].key) == winners.first.map { candidates[$0] })
                }
            }
        }

        /// A shared index evaluates the condition again when another node created the key
        /// between its read and its insert: of concurrent create-only commits across nodes,
        /// exactly one creates the key and every other fails its condition.
        @Test(arguments: Backend.shared)
        func conditionEvaluatedOncePerAttemptAcrossNodes(_ backend: Backend) throws {
            let open = try #require(backend.openNodes)
            let nodes = try open(3)
            let commits = nodes.map { GroupCommit($0) }
            for round in 0..<5 {
                let candidates = try (0..<12).map { _ in try record("race-\(round)") }
                let outcomes = concurrently(candidates.count) { i in
                    Result { () throws(StoreError) in try commits[i % nodes.count].commit(candidates[i], when: .createOnly) }
                }
                #expect(outcomes.filter { $0 == .success(.created) }.count == 1)
                #expect(outcomes.filter { $0 == .failure(.preconditionFailed) }.count == candidates.count - 1)
            }
        }

        /// One owner starts uploads on several nodes at once under a limit of 3: exactly 3 get in.
        @Test(arguments: Backend.shared)
        func ownerLimitAcrossNodes(_ backend: Backend) throws {
            let open = try #require(backend.openNodes)
            let nodes = try open(3)
            let uploads = try (0..<12).map { _ in try tusUpload() }
            let outcomes = concurrently(uploads.count) { i in
                Result { () throws(StoreError) in try nodes[i % nodes.count].insert(uploads[i], owner: "dave", limit: 3) }
            }
            #expect(outcomes.filter { (try? $0.get()) != nil }.count == 3)
            #expect(try nodes[0].unfinishedUploads().count == 3)
        }

        /// Deletes and replaces conditional on the same version race (threads spread over the
        /// backend's nodes where it has several): exactly one of them succeeds.
        @Test(arguments: Backend.all)
        func deleteAndReplaceOfOneVersionHaveOneWinner(_ backend: Backend) throws {
            let nodes = try Self.handles(backend)
            let commits = nodes.map { GroupCommit($0) }
            let base = try record("contended")
            try nodes[0].put(base)
            let candidates = try (0..<12).map { _ in try record("contended") }
            let outcomes = concurrently(candidates.count) { i in
                let node = nodes[i % nodes.count]
                return Result { () throws(StoreError) in
                    if i.isMultiple(of: 2) {
                        _ = try node.remove(base.key, when: .ifMatch([base.version]))
                    } else {
                        _ = try commits[i % nodes.count].commit(candidates[i], when: .ifMatch([base.version]))
                    }
                }
            }
            #expect(outcomes.filter { (try? $0.get()) != nil }.count == 1)
            #expect(outcomes.allSatisfy { if case .failure(let error) = $0 { [.preconditionFailed, .notFound].contains(error) } else { true } })
        }

        /// Threads create the same bucket at once: exactly one is told it created it.
        @Test(arguments: Backend.all)
        func bucketCreationHasOneWinner(_ backend: Backend) throws {
            let nodes = try Self.handles(backend)
            let created = concurrently(12) { i in (try? nodes[i % nodes.count].createBucket(Bucket(name: "race", created: Int64(i)))) ?? false }
            #expect(created.filter { $0 }.count == 1)
        }

        /// Parts saved while the upload is being completed: each save either lands before the
        /// completion (and is dropped with the others) or is refused; none survives it.
        @Test(arguments: Backend.all)
        func noPartOutlivesCompletion(_ backend: Backend) throws {
            let nodes = try Self.handles(backend)
            let upload = try multipartUpload("bkt/k")
            try nodes[0].insertMultipart(upload, owner: nil, limit: 0)
            let outcomes = concurrently(13) { i in
                let node = nodes[i % nodes.count]
                return Result { () throws(StoreError) in
                    if i == 6 {
                        try node.markCompleted(upload.id, etag: "\"e-12\"", checksum: nil)
                    } else {
                        _ = try node.savePart(UploadedPart(number: i + 1, size: 1, md5: Array(repeating: 1, count: 16), modified: 1),
                                              of: upload.id)
                    }
                }
            }
            #expect(outcomes.allSatisfy { if case .failure(let error) = $0 { error == .uploadNotFound } else { true } })
            #expect(try nodes[0].parts(of: upload.id).isEmpty)
            #expect(try nodes[0].multipart(upload.id)?.completedETag == "\"e-12\"")
        }

        /// A read, plain or with a completion, on any node sees every commit acknowledged before
        /// it began, while other threads keep reads of the same key in flight (the reads that
        /// share a round trip must not hand a newer read an older answer).
        @Test(arguments: Backend.all)
        func readsSeeEveryAcknowledgedCommit(_ backend: Backend) throws {
            let nodes = try Self.handles(backend)
            let key = try BlobKey("fresh")
            let stop = Atomic<Bool>(false)
            let readers = DispatchGroup()
            for i in 0..<3 {
                DispatchQueue.global().async(group: readers) {
                    for _ in 0..<200_000 where !stop.load(ordering: .relaxed) { _ = try? nodes[i % nodes.count].record(for: key) }
                }
            }
            defer {
                stop.store(true, ordering: .relaxed)
                readers.wait()
            }
            var stale: [String] = []
            for round in 0..<30 {
                let stored = try record("fresh")
                try nodes[round % nodes.count].put(stored)
                for (n, node) in nodes.enumerated() {
                    if try node.record(for: key) != stored { stale.append("round \(round) node \(n)") }
                    let read = Mutex<Result<BlobRecord?, StoreError>?>(nil)
                    let done = DispatchSemaphore(value: 0)
                    node.record(for: key) { result in
                        read.withLock { $0 = result }
                        done.signal()
                    }
                    done.wait()
                    if read.withLock({ $0 }) != .success(stored) { stale.append("round \(round) node \(n), with a completion") }
                }
            }
            #expect(stale.isEmpty, "\(stale)")
        }

        /// Several nodes of the backend's catalog where it has them, else one handle.
        static func handles(_ backend: Backend) throws -> [any Catalog] {
            if let open = backend.openNodes { return try open(3) }
            return [try backend.open()]
        }

        static func ifMatchRace(on nodes: [any Catalog]) throws {
            let commits = nodes.map { GroupCommit($0) }
            let base = try record("contended")
            try nodes[0].put(base)
            let count = 12
            let candidates = try (0..<count).map { _ in try record("contended") }
            let outcomes = concurrently(count) { i in
                Result { () throws(StoreError) in
                    try commits[i % nodes.count].commit(candidates[i], when: .ifMatch([base.version]))
                }
            }
            let winners = outcomes.indices.filter { outcomes[$0] == .success(.replaced(previous: base)) }
            #expect(winners.count == 1)
            #expect(outcomes.filter { $0 == .failure(.preconditionFailed) }.count == count - 1)
            guard let winner = winners.first else { return }
            for node in nodes { #expect(try node.record(for: base.key) == candidates[winner]) }
            let losers = Set(candidates.map(\.version)).subtracting([candidates[winner].version])
            #expect(Set(try nodes[0].garbage()).intersection(losers).isEmpty)
        }
    }
}

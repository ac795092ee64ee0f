import Foundation
import Synchronization
import Testing
@testable import BlobStore
@testable import CatalogPostgres
@testable import CatalogSQLite

extension CatalogConformance {
    /// Commits and removals under each write condition, as the HTTP layers phrase them.
    @Suite struct Commits {
        /// Create-only (If-None-Match: *): created when absent, refused (and nothing changed) when present.
        @Test(arguments: Backend.all)
        func createOnly(_ backend: Backend) throws {
            let index = try backend.open()
            let first = try record("k")
            #expect(try index.commit(first, when: .createOnly) == .created)
            #expect(throws: StoreError.preconditionFailed) { try index.commit(try record("k"), when: .createOnly) }
            #expect(try index.record(for: first.key) == first)
        }

        /// If-Match on a version: replaces only that version, and reports it as the previous record.
        @Test(arguments: Backend.all)
        func ifMatchVersion(_ backend: Backend) throws {
            let index = try backend.open()
            let first = try record("k"), second = try record("k"), third = try record("k")
            #expect(throws: StoreError.preconditionFailed) { try index.commit(first, when: .ifMatch([first.version])) }
            #expect(try index.record(for: first.key) == nil)
            try index.put(first)
            #expect(try index.commit(second, when: .ifMatch([first.version])) == .replaced(previous: first))
            // The stale version no longer matches.
            #expect(throws: StoreError.preconditionFailed) { try index.commit(third, when: .ifMatch([first.version])) }
            #expect(try index.record(for: first.key) == second)
        }

        /// An unconditional write creates, then replaces; every field of the record round-trips.
        @Test(arguments: Backend.all)
        func unconditionalReplaceKeepsEveryField(_ backend: Backend) throws {
            let index = try backend.open()
            let plain = try record("dir/\u{1F600} \u{E9}")
            #expect(try index.put(plain) == .created)
            #expect(try index.record(for: plain.key) == plain)
            let attributes = BlobAttributes(contentType: "text/plain; charset=utf-8", cacheControl: "no-cache",
                                            contentDisposition: "attachment; filename=\"a b\"", contentEncoding: "gzip",
                                            contentLanguage: "fr", expires: "Wed, 21 Oct 2015 07:28:00 GMT",
                                            userMetadata: [.init(name: "b", value: "2: two"), .init(name: "a", value: "\u{E9}")])
            let full = BlobRecord(key: plain.key, version: newVersion(), size: 1 << 40, sha256: (0..<32).map { UInt8($0) },
                                  attributes: attributes, modified: 1_750_000_000, md5: Array(repeating: 0x5A, count: 16), parts: 3,
                                  partSizes: [5 << 20, 5 << 20, 17], partChecksums: ["AAAAAA==", "BBBBBB==", "CCCCCC=="],
                                  checksum: "crc32:DDDDDD==-3")
            #expect(try index.put(full) == .replaced(previous: plain))
            #expect(try index.record(for: plain.key) == full)
            #expect(try index.list(prefix: [], after: nil, limit: 10) == [full])
        }

        /// Empty strings stay empty strings (not NULL, not absent), in records and uploads alike,
        /// and an empty owner is an owner like any other.
        @Test(arguments: Backend.all)
        func emptyValuesRoundTrip(_ backend: Backend) throws {
            let index = try backend.open()
            let attributes = BlobAttributes(contentType: "", cacheControl: "", contentDisposition: "", contentEncoding: "",
                                            contentLanguage: "", expires: "", userMetadata: [.init(name: "e", value: "")])
            let empty = BlobRecord(key: try BlobKey("e"), version: newVersion(), size: 0, sha256: Array(repeating: 0, count: 32),
                                   attributes: attributes, modified: 0, md5: Array(repeating: 0, count: 16), parts: 0, checksum: "")
            try index.put(empty)
            #expect(try index.record(for: empty.key) == empty)
            var upload = try tusUpload()
            upload.metadata = ""
            upload.attributes = BlobAttributes(contentType: "", cacheControl: "", contentDisposition: "", contentEncoding: "", expires: "")
            try index.insert(upload, owner: "", limit: 1)
            #expect(try index.upload(upload.id) == upload)
            #expect(throws: StoreError.tooManyUploads(limit: 1)) { try index.insert(try tusUpload(), owner: "", limit: 1) }
        }

        /// The condition is evaluated against the current record (nil when absent).
        @Test(arguments: Backend.all)
        func conditionSeesCurrentRecordOnce(_ backend: Backend) throws {
            let index = try backend.open()
            let first = try record("k")
            #expect(try index.commit(first, when: .createOnly) == .created)
            #expect(try index.commit(try record("k"), when: .ifMatch([first.version])) == .replaced(previous: first))
        }

        /// Removal: `.notFound` when absent, `.preconditionFailed` (record kept) when the condition
        /// fails, else the removed record; the removed version becomes garbage.
        @Test(arguments: Backend.all)
        func removeConditions(_ backend: Backend) throws {
            let index = try backend.open()
            let key = try BlobKey("gone")
            #expect(throws: StoreError.notFound) { try index.remove(key, when: .unconditional) }
            let stored = try record("gone")
            try index.put(stored)
            #expect(throws: StoreError.preconditionFailed) { try index.remove(key, when: .ifMatch(["other"])) }
            #expect(try index.record(for: key) == stored)
            #expect(try index.remove(key, when: .ifMatch([stored.version])) == stored)
            #expect(try index.record(for: key) == nil)
            #expect(throws: StoreError.notFound) { try index.remove(key, when: .unconditional) }
            #expect(try index.garbage().contains(stored.version))
            #expect(try !index.containsVersion(stored.version))
        }

        /// A replaced version becomes garbage; the current one is not.
        @Test(arguments: Backend.all)
        func replacedVersionIsGarbage(_ backend: Backend) throws {
            let index = try backend.open()
            let first = try record("k"), second = try record("k")
            try index.put(first)
            #expect(try index.garbage().isEmpty)
            try index.put(second)
            let garbage = try index.garbage()
            #expect(garbage.contains(first.version) && !garbage.contains(second.version))
        }

        /// N threads create the same key at once, through a `GroupCommit` (batched) and as
        /// batches of their own (concurrent transactions): exactly one wins, the others are
        /// refused, and the winner's record is the one stored, byte for byte (the candidates
        /// differ in every field).
        @Test(arguments: Backend.all, [true, false])
        func concurrentCreateOnlyHasOneWinner(_ backend: Backend, grouped: Bool) throws {
            let index = try backend.open()
            let commits = GroupCommit(index)
            let count = 16
            for round in 0..<3 {
                let key = try BlobKey("race-\(round)")
                let candidates = (0..<count).map { distinctCandidate(key, $0) }
                let outcomes = concurrently(count) { i in
                    Result { () throws(StoreError) in
                        grouped ? try commits.commit(candidates[i], when: .createOnly) : try index.commit(candidates[i], when: .createOnly)
                    }
                }
                let winners = outcomes.indices.filter { outcomes[$0] == .success(.created) }
                #expect(winners.count == 1)
                #expect(outcomes.filter { $0 == .failure(.preconditionFailed) }.count == count - 1)
                if let winner = winners.first { #expect(try index.record(for: key) == candidates[winner]) }
            }
        }

        /// A commit that completes a tus upload marks it complete at the key, in the same transaction.
        @Test(arguments: Backend.all)
        func commitCompletesUpload(_ backend: Backend) throws {
            let index = try backend.open()
            let upload = UploadRecord(id: newVersion(), length: 7, offset: 0, hashState: [], metadata: "", key: nil,
                                      attributes: BlobAttributes(), expires: Int64(time(nil)) + 3600)
            try index.insert(upload, owner: nil, limit: 0)
            #expect(try index.unfinishedUploads() == [upload.id])
            let stored = try record("done", size: 7)
            #expect(try index.commit(stored, completingUpload: upload.id, when: .createOnly) == .created)
            let completed = try index.upload(upload.id)
            #expect(completed?.completedKey == stored.key && completed?.offset == 7 && completed?.isComplete == true)
            #expect(try index.unfinishedUploads().isEmpty)
            // A refused commit leaves the upload as it was.
            let other = UploadRecord(id: newVersion(), length: 7, offset: 0, hashState: [], metadata: "", key: nil,
                                     attributes: BlobAttributes(), expires: Int64(time(nil)) + 3600)
            try index.insert(other, owner: nil, limit: 0)
            #expect(throws: StoreError.preconditionFailed) {
                try index.commit(try record("done"), completingUpload: other.id, when: .createOnly)
            }
            #expect(try index.upload(other.id) == other)
            // An id no upload has changes nothing but the blob.
            let unknown = newVersion()
            #expect(try index.commit(try record("elsewhere"), completingUpload: unknown, when: .createOnly) == .created)
            #expect(try index.upload(unknown) == nil)
        }

        /// Versions and totals follow commits and removals; the asynchronous read sees a commit
        /// acknowledged before it.
        @Test(arguments: Backend.all)
        func versionsAndTotals(_ backend: Backend) throws {
            let index = try backend.open()
            #expect(try index.totals() == (0, 0))
            let a = try record("a", size: 10), b = try record("b", size: 32), c = try record("c", size: 0)
            for stored in [a, b, c] { try index.put(stored) }
            #expect(try index.totals() == (3, 42))
            #expect(try index.allVersions() == [a.version, b.version, c.version])
            let folder = String(a.version.prefix(2))
            #expect(try index.versions(inFolder: folder) == Set([a, b, c].map(\.version).filter { $0.hasPrefix(folder) }))
            #expect(try index.containsVersion(b.version) && !index.containsVersion(newVersion()))
            _ = try index.remove(b.key, when: .unconditional)
            #expect(try index.totals() == (2, 10))
            let read = Mutex<Result<BlobRecord?, StoreError>?>(nil)
            let done = DispatchSemaphore(value: 0)
            index.record(for: a.key) { result in
                read.withLock { $0 = result }
                done.signal()
            }
            done.wait()
            #expect(read.withLock { $0 } == .success(a))
        }
    }
}

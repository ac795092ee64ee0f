import Foundation
import Testing
@testable import BlobStore
@testable import CatalogPostgres
@testable import CatalogSQLite

extension CatalogConformance {
    /// Batches of commits (`BlobIndex.commit(_:)`): one transaction, in order, each condition
    /// decided against the rows as the batch's earlier requests left them; a failed condition
    /// fails its request only, a failure of the catalog the whole batch.
    @Suite struct Batches {
        /// One batch whose requests create, replace, and fail their conditions on absent and
        /// present keys: each gets its own outcome, and only the successful ones are stored.
        @Test(arguments: Backend.all)
        func mixedOutcomesInOneBatch(_ backend: Backend) throws {
            let index = try backend.open()
            let a1 = try record("a"), b1 = try record("b")
            try index.put(a1)
            try index.put(b1)
            let new = try record("new"), a2 = try record("a"), b2 = try record("b"), missing = try record("missing")
            let plain = try record("plain"), b3 = try record("b", modified: 1_700_000_100)
            let results = try index.commit([
                CommitRequest(new, when: .createOnly),
                CommitRequest(a2, when: .ifMatch([a1.version])),
                CommitRequest(b2, when: .createOnly),
                CommitRequest(missing, when: .ifMatch([a1.version])),
                CommitRequest(plain, when: .unconditional),
                CommitRequest(b3, when: .ifUnmodifiedSince(1_600_000_000)),
            ])
            #expect(results == [.success(.created), .success(.replaced(previous: a1)), .failure(.preconditionFailed),
                                .failure(.preconditionFailed), .success(.created), .failure(.preconditionFailed)])
            #expect(try index.record(for: new.key) == new)
            #expect(try index.record(for: a1.key) == a2)
            #expect(try index.record(for: b1.key) == b1)
            #expect(try index.record(for: missing.key) == nil)
            #expect(try index.record(for: plain.key) == plain)
            #expect(try index.garbage() == [a1.version])
            #expect(try index.totals() == (4, 12))
        }

        /// One key several times in one batch: each request sees the ones before it, so the
        /// outcomes chain; a request whose condition only held before an earlier one changed
        /// the key fails, and its version is never garbage.
        @Test(arguments: Backend.all)
        func sameKeyTwiceInOneBatch(_ backend: Backend) throws {
            let index = try backend.open()
            let v1 = try record("k"), v2 = try record("k"), v3 = try record("k"), v4 = try record("k")
            let results = try index.commit([
                CommitRequest(v1, when: .unconditional),
                CommitRequest(v2, when: .ifMatch([v1.version])),
                CommitRequest(v3, when: .ifMatch([v1.version])),
                CommitRequest(v4, when: .ifNoneMatch([v1.version])),
            ])
            #expect(results == [.success(.created), .success(.replaced(previous: v1)), .failure(.preconditionFailed),
                                .success(.replaced(previous: v2))])
            #expect(try index.record(for: v1.key) == v4)
            #expect(Set(try index.garbage()) == [v1.version, v2.version])
            #expect(try index.totals() == (1, 3))
        }

        /// Two create-only requests for one key in one batch: the first creates it, the second
        /// finds it there. The first one's record is the one stored, byte for byte.
        @Test(arguments: Backend.all)
        func twoCreateOnlyCommitsOfOneKey(_ backend: Backend) throws {
            let index = try backend.open()
            let key = try BlobKey("once")
            let first = distinctCandidate(key, 1), second = distinctCandidate(key, 2)
            let results = try index.commit([CommitRequest(first, when: .createOnly), CommitRequest(second, when: .createOnly)])
            #expect(results == [.success(.created), .failure(.preconditionFailed)])
            #expect(try index.record(for: key) == first)
            #expect(try index.garbage().isEmpty)
        }

        /// Requests completing resumable uploads in one batch: each one that succeeds marks its
        /// upload complete at its key; one whose condition fails leaves its upload as it was.
        @Test(arguments: Backend.all)
        func completingUploadsInOneBatch(_ backend: Backend) throws {
            let index = try backend.open()
            let uploads = try (0..<3).map { _ in try sevenByteUpload() }
            for upload in uploads { try index.insert(upload, owner: nil, limit: 0) }
            let x = try record("x", size: 7), xAgain = try record("x", size: 7), y = try record("y", size: 7)
            let results = try index.commit([
                CommitRequest(x, completingUpload: uploads[0].id, when: .createOnly),
                CommitRequest(xAgain, completingUpload: uploads[1].id, when: .createOnly),
                CommitRequest(y, completingUpload: uploads[2].id, when: .unconditional),
            ])
            #expect(results == [.success(.created), .failure(.preconditionFailed), .success(.created)])
            for (upload, key) in [(uploads[0], x.key), (uploads[2], y.key)] {
                let completed = try #require(try index.upload(upload.id))
                #expect(completed.completedKey == key && completed.offset == 7 && completed.isComplete)
            }
            #expect(try index.upload(uploads[1].id) == uploads[1])
            #expect(try index.unfinishedUploads() == [uploads[1].id])
            #expect(try index.record(for: x.key) == x)
        }

        /// The catalog refuses one request's row mid-batch (a trigger raises an error): the
        /// batch fails whole with the catalog's error, and nothing of it is stored, neither the
        /// requests before the refused one nor after, nor their uploads or garbage. Without the
        /// refused request the same batch commits; through a `GroupCommit` the refusal reaches
        /// its caller.
        @Test(arguments: Backend.all)
        func catalogFailureMidBatchStoresNothing(_ backend: Backend) throws {
            let index = try backend.open()
            let kept = try record("kept")
            try index.put(kept)
            let upload = try sevenByteUpload()
            try index.insert(upload, owner: nil, limit: 0)
            let refusal = try backend.refuseWrites(index, try BlobKey("refused"))
            let fresh = try record("fresh"), replacement = try record("kept"), done = try record("done", size: 7)
            let refused = try record("refused"), after = try record("after")
            let before = [CommitRequest(fresh, when: .createOnly), CommitRequest(replacement, when: .ifMatch([kept.version])),
                          CommitRequest(done, completingUpload: upload.id, when: .createOnly)]
            #expect(throws: refusal) {
                try index.commit(before + [CommitRequest(refused, when: .createOnly), CommitRequest(after, when: .createOnly)])
            }
            for absent in [fresh, done, refused, after] { #expect(try index.record(for: absent.key) == nil) }
            #expect(try index.record(for: kept.key) == kept)
            #expect(try index.upload(upload.id) == upload)
            #expect(try index.garbage().isEmpty)
            #expect(try index.totals() == (1, 3))

            #expect(throws: refusal) { try GroupCommit(index).commit(refused, when: .unconditional) }
            let results = try index.commit(before + [CommitRequest(after, when: .createOnly)])
            #expect(results == [.success(.created), .success(.replaced(previous: kept)), .success(.created), .success(.created)])
            #expect(try index.upload(upload.id)?.completedKey == done.key)
            #expect(try index.garbage() == [kept.version])
        }

        /// A batch that fails before it reaches the catalog (the group commit's `beforeBatch`,
        /// where the store fsyncs folders) fails every request in it and stores nothing.
        @Test(arguments: Backend.all)
        func failureBeforeTheBatchStoresNothing(_ backend: Backend) throws {
            let index = try backend.open()
            let commits = GroupCommit(index) { _ throws(StoreError) in throw .insufficientStorage }
            let lost = try record("lost")
            #expect(throws: StoreError.insufficientStorage) { try commits.commit(lost, when: .createOnly) }
            #expect(try index.record(for: lost.key) == nil)
        }
    }
}

/// A new resumable upload of 7 bytes, nothing received yet.
private func sevenByteUpload() throws -> UploadRecord {
    UploadRecord(id: newVersion(), length: 7, offset: 0, hashState: [], metadata: "", key: nil,
                 attributes: BlobAttributes(), expires: Int64(time(nil)) + 3600)
}

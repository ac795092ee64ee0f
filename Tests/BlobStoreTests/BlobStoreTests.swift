import Foundation
import Testing
@testable import BlobStore
@testable import CatalogPostgres
@testable import CatalogSQLite

/// A fresh data directory per test, removed afterwards.
final class TempDirectory {
    let path: String
    init() {
        path = NSTemporaryDirectory() + "blobstore-test-" + UUID().uuidString
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}

extension BlobStore {
    func put(_ bytes: [UInt8], as key: String, contentType: String = "application/octet-stream",
             if condition: WriteCondition = .always) throws -> StoredBlob {
        let stream = try beginWrite(expectedSize: UInt64(bytes.count))
        try bytes.withUnsafeBytes { try stream.write($0) }
        return try stream.commit(as: BlobKey(key), attributes: BlobAttributes(contentType: contentType), if: condition)
    }

    func contents(of key: String) throws -> [UInt8] {
        let blob = try open(BlobKey(key))
        var out = [UInt8](repeating: 0, count: Int(blob.record.size))
        var done = 0
        while done < out.count {
            let n = try out.withUnsafeMutableBytes { try blob.read(at: UInt64(done), into: UnsafeMutableRawBufferPointer(rebasing: $0[done...])) }
            if n == 0 { break }
            done += n
        }
        return out
    }
}

func filesIn(_ path: String) -> [String] {
    (FileManager.default.enumerator(atPath: path)?.allObjects as? [String] ?? []).filter {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path + "/" + $0, isDirectory: &isDirectory) && !isDirectory.boolValue
    }
}

@Suite struct BlobStoreTests {
    /// A stream with a BodyHasher: SHA-256, MD5 and the extra digest see every byte once, in
    /// order, whether hashed on the writer's thread (small bodies) or on the second one (large
    /// or unknown), and the committed record has that SHA-256.
    @Test(arguments: [UInt64(100), UInt64((3 << 20) + 12_345), nil])
    func bodyHasherSeesEveryByte(declared: UInt64?) throws {
        let dir = TempDirectory()
        let store = try BlobStore(directory: dir.path)
        let count = Int(declared ?? UInt64((3 << 20) + 12_345))
        let body = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 13) }
        final class Seen: @unchecked Sendable { var bytes: [UInt8] = [] }
        let seen = Seen()
        let hasher = BodyHasher(md5: true, extra: { seen.bytes += $0 }, expectedSize: declared)
        let stream = try store.beginWrite(expectedSize: declared, hasher: hasher)
        for start in stride(from: 0, to: body.count, by: 70_001) {
            try body[start..<min(body.count, start + 70_001)].withUnsafeBytes { try stream.write($0) }
        }
        let digests = try stream.digests()
        var md5 = MD5Hasher()
        body.withUnsafeBytes { md5.update($0) }
        #expect(digests.md5 == md5.finalize())
        #expect(digests.sha256 == SHA256Hasher.hash(body))
        #expect(seen.bytes == body)
        let stored = try stream.commit(as: BlobKey("hashed"))
        #expect(stored.record.sha256 == SHA256Hasher.hash(body) && stored.record.size == UInt64(count))
        #expect(try store.open(BlobKey("hashed")).bytes(at: 0, count: count) == body)
    }

    @Test func putThenGet() throws {
        let dir = TempDirectory()
        let store = try BlobStore(directory: dir.path)
        let stored = try store.put(Array("hello\n".utf8), as: "a/b.txt", contentType: "text/plain")
        #expect(stored.created)
        #expect(stored.record.size == 6)
        #expect(stored.record.sha256Hex == "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03")
        #expect(try store.contents(of: "a/b.txt") == Array("hello\n".utf8))
        #expect(try store.record(for: BlobKey("a/b.txt"))?.contentType == "text/plain")
    }

    /// Every commit fsyncs the WAL. (GRDB sets NORMAL when it opens a pool in WAL mode, which
    /// silently overrode FULL set before it.)
    @Test func indexCommitsAreSynchronousFull() throws {
        let dir = TempDirectory()
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        let index = try SQLiteBlobIndex(path: dir.path + "/index.sqlite")
        #expect(try index.writerSynchronousLevel() == 2)
    }

    /// A checkpoint every few dozen batches: the rows reach the database file long before
    /// SQLite's automatic checkpoint (kept as a backstop) would run, and the WAL starts over
    /// instead of growing.
    @Test func indexCheckpointsEveryFewDozenBatches() throws {
        let dir = TempDirectory()
        let store = try BlobStore(directory: dir.path)
        let database = dir.path + "/index.sqlite"
        func size(_ path: String) -> Int {
            ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
        }
        let before = size(database)
        for i in 0..<(3 * SQLiteBlobIndex.batchesPerCheckpoint) {
            _ = try store.put(Array("blob \(i)".utf8), as: "k/\(i)")
        }
        #expect(size(database) > before, "nothing was checkpointed into \(database)")
        // About one checkpoint interval's worth of frames (a few per one-record batch; the
        // checkpoint runs after its batch is answered, so a loaded machine may see a commit or
        // two more before it), not three intervals' (96 batches, about 1.5 MiB).
        let wal = size(database + "-wal")
        #expect(wal < SQLiteBlobIndex.batchesPerCheckpoint * 6 * 4096, "WAL of \(wal) bytes")
    }

    /// New versions of uploads close in time share a `blobs/ab` folder.
    @Test func versionsCloseInTimeShareAFolder() {
        let versions = (0..<8).map { _ in BlobStore.newVersion() }
        #expect(Set(versions).count == 8)
        #expect(versions.allSatisfy { $0.utf8.count == 32 && $0.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) } })
        // Allow for a 16 s boundary between the first and the last.
        #expect(Set(versions.map { $0.prefix(2) }).count <= 2)
    }

    @Test func writeBufferFitsTheExpectedSize() {
        #expect(HashingFileWriter.bufferSize(expecting: 0) == 4096)
        #expect(HashingFileWriter.bufferSize(expecting: 4096) == 4096)
        #expect(HashingFileWriter.bufferSize(expecting: 4097) == 8192)
        #expect(HashingFileWriter.bufferSize(expecting: nil) == HashingFileWriter.maxBufferSize)
        #expect(HashingFileWriter.bufferSize(expecting: 1 << 40) == HashingFileWriter.maxBufferSize)
    }

    @Test func emptyAndLargeBlobs() throws {
        let dir = TempDirectory()
        let store = try BlobStore(directory: dir.path)
        _ = try store.put([], as: "empty")
        #expect(try store.contents(of: "empty") == [])
        // Larger than the write buffer, written in odd-sized chunks.
        let big = (0..<(HashingFileWriter.maxBufferSize * 3 + 17)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let stream = try store.beginWrite()
        var offset = 0
        while offset < big.count {
            let n = min(7919, big.count - offset)
            try big[offset..<offset + n].withUnsafeBytes { try stream.write($0) }
            offset += n
        }
        _ = try stream.commit(as: BlobKey("big"), attributes: BlobAttributes(contentType: "application/octet-stream"))
        #expect(try store.contents(of: "big") == big)
    }

    @Test func replaceKeepsOpenReadersOnTheOldVersion() throws {
        let dir = TempDirectory()
        let store = try BlobStore(directory: dir.path)
        let first = try store.put(Array("version one".utf8), as: "k")
        let reader = try store.open(BlobKey("k"))
        let second = try store.put(Array("two".utf8), as: "k")
        #expect(!second.created)
        #expect(second.record.version != first.record.version)
        var buffer = [UInt8](repeating: 0, count: 32)
        let n = try buffer.withUnsafeMutableBytes { try reader.read(at: 0, into: $0) }
        #expect(Array(buffer[..<n]) == Array("version one".utf8))
        #expect(try store.contents(of: "k") == Array("two".utf8))
        // The old version's file is gone from the directory: one blob file remains.
        #expect(filesIn(dir.path + "/blobs").count == 1)
    }

    @Test func deleteRemovesRecordAndFile() throws {
        let dir = TempDirectory()
        let store = try BlobStore(directory: dir.path)
        _ = try store.put([1, 2, 3], as: "k")
        let removed = try store.delete(BlobKey("k"))
        #expect(removed.size == 3)
        #expect(try store.record(for: BlobKey("k")) == nil)
        #expect(throws: StoreError.notFound) { try store.open(BlobKey("k")) }
        #expect(throws: StoreError.notFound) { try store.delete(BlobKey("k")) }
        #expect(filesIn(dir.path + "/blobs").isEmpty)
    }

    @Test func conditionalCommit() throws {
        let dir = TempDirectory()
        let store = try BlobStore(directory: dir.path)
        _ = try store.put([1], as: "k")
        #expect(throws: StoreError.preconditionFailed) { try store.put([2], as: "k", if: .createOnly) }
        #expect(try store.contents(of: "k") == [1])
        // The refused version leaves no file behind.
        #expect(filesIn(dir.path + "/blobs").count == 1)
    }

    @Test func abandonedUploadLeavesNoFile() throws {
        let dir = TempDirectory()
        let store = try BlobStore(directory: dir.path)
        let old = try store.put(Array("old".utf8), as: "k")
        let stream = try store.beginWrite()
        try [UInt8](repeating: 7, count: 300_000).withUnsafeBytes { try stream.write($0) }
        #expect(filesIn(dir.path + "/blobs").count == 2)
        stream.abandon()
        #expect(filesIn(dir.path + "/blobs").count == 1, "only the old version's file")
        #expect(try store.record(for: BlobKey("k")) == old.record, "the key still holds the old version")
        #expect(try store.contents(of: "k") == Array("old".utf8))
    }

    @Test func digestMismatchStoresNothing() throws {
        let dir = TempDirectory()
        let store = try BlobStore(directory: dir.path)
        let stream = try store.beginWrite(expectedSHA256: [UInt8](repeating: 0, count: 32))
        try [UInt8](repeating: 1, count: 10).withUnsafeBytes { try stream.write($0) }
        #expect {
            try stream.commit(as: BlobKey("k"), attributes: BlobAttributes(contentType: "x"))
        } throws: { error in
            if case StoreError.digestMismatch = error { return true }
            return false
        }
        #expect(try store.record(for: BlobKey("k")) == nil)
        #expect(filesIn(dir.path + "/blobs").isEmpty)
    }

    @Test func sizeLimit() throws {
        let dir = TempDirectory()
        let store = try BlobStore(directory: dir.path, options: BlobStoreOptions(maxBlobSize: 10))
        #expect(throws: StoreError.tooLarge(limit: 10)) { try store.beginWrite(expectedSize: 11) }
        let stream = try store.beginWrite()
        try [UInt8](repeating: 1, count: 10).withUnsafeBytes { try stream.write($0) }
        #expect(throws: StoreError.tooLarge(limit: 10)) { try [UInt8(1)].withUnsafeBytes { try stream.write($0) } }
        #expect(filesIn(dir.path + "/blobs").isEmpty)
    }

    @Test func contentAddressed() throws {
        let dir = TempDirectory()
        let store = try BlobStore(directory: dir.path)
        func post(_ bytes: [UInt8]) throws -> StoredBlob {
            let stream = try store.beginWrite()
            try bytes.withUnsafeBytes { try stream.write($0) }
            return try stream.commit(as: nil, attributes: BlobAttributes(contentType: "x"))
        }
        let first = try post(Array("hello\n".utf8))
        #expect(first.created)
        #expect(first.record.key.rawValue == "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03")
        let again = try post(Array("hello\n".utf8))
        #expect(!again.created)
        #expect(again.record == first.record)
        #expect(filesIn(dir.path + "/blobs").count == 1)
    }

    @Test func indexSurvivesReopening() throws {
        let dir = TempDirectory()
        do {
            let store = try BlobStore(directory: dir.path)
            for i in 0..<50 { _ = try store.put(Array("blob \(i)".utf8), as: "k/\(i)") }
        }
        let reopened = try BlobStore(directory: dir.path)
        for i in 0..<50 { #expect(try reopened.contents(of: "k/\(i)") == Array("blob \(i)".utf8)) }
    }

    @Test func reopeningRemovesFilesOfUnfinishedUploads() throws {
        let dir = TempDirectory()
        let kept: String
        do {
            let store = try BlobStore(directory: dir.path)
            kept = try store.put([1], as: "kept").record.version
        }
        // A crash mid-upload: versions logged as pending, files written in place, never committed;
        // the last line cut short. The committed version is logged too (a crash before forgetting it).
        let lost = ["00" + String(repeating: "7", count: 30), "ff" + String(repeating: "8", count: 30)]
        let log = lost.map { $0 + "\n" }.joined() + kept + "\n" + "00" + String(repeating: "9", count: 10)
        _ = FileManager.default.createFile(atPath: dir.path + "/tmp/pending-4", contents: Data(log.utf8))
        for version in lost {
            _ = FileManager.default.createFile(atPath: dir.path + "/blobs/" + BlobRecord.relativePath(of: version), contents: Data([4, 5]))
        }
        // The same left by an earlier release: a marker and its file, and a temp file.
        let marked = "01" + String(repeating: "6", count: 30)
        try FileManager.default.createDirectory(atPath: dir.path + "/tmp/01", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: dir.path + "/tmp/01/" + marked, contents: Data())
        _ = FileManager.default.createFile(atPath: dir.path + "/blobs/01/" + marked, contents: Data([6]))
        _ = FileManager.default.createFile(atPath: dir.path + "/tmp/01/orphan.part", contents: Data([1, 2, 3]))
        #expect(filesIn(dir.path + "/blobs").count == 4)

        let reopened = try BlobStore(directory: dir.path)
        #expect(filesIn(dir.path + "/blobs") == ["\(kept.prefix(2))/\(kept)"])
        #expect(try reopened.contents(of: "kept") == [1])
        // The logs read are gone; the reopened store appends to a new one.
        #expect(filesIn(dir.path + "/tmp") == [])
        _ = try reopened.put([2], as: "next")
        #expect(filesIn(dir.path + "/tmp") == ["pending-5"])
    }

    @Test func pendingLogsRollOverAndGoOnceForgotten() throws {
        let dir = TempDirectory()
        let folder = dir.path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var entries: [PendingWrites.Entry] = []
        do {
            let logs = PendingWrites(folder: folder, first: 0)
            #expect(filesIn(folder).isEmpty)
            for i in 0...PendingWrites.entriesPerLog {
                entries.append(try logs.add(String(format: "%032x", i)))
            }
            #expect(Set(filesIn(folder)) == ["pending-0", "pending-1"])
            let first = PendingWrites.leftBehind(in: folder)
            #expect(first.map(\.log) == [0, 1])
            #expect(first[0].versions.count == PendingWrites.entriesPerLog && first[1].versions == [String(format: "%032x", PendingWrites.entriesPerLog)])
            // pending-0 goes with its last open entry, not before.
            for entry in entries.dropLast(2) { logs.forget(entry) }
            #expect(Set(filesIn(folder)) == ["pending-0", "pending-1"])
            logs.forget(entries[entries.count - 2])
            #expect(filesIn(folder) == ["pending-1"])
            logs.forget(entries[entries.count - 1])
            // The current log stays while the store is open, and goes when it closes with nothing open.
            #expect(filesIn(folder) == ["pending-1"])
        }
        #expect(filesIn(folder).isEmpty)
    }

    @Test func secondStoreOnTheSameDirectoryIsRefused() throws {
        let dir = TempDirectory()
        let store = try BlobStore(directory: dir.path)
        #expect(throws: StoreError.dataDirectoryLocked(path: dir.path)) { try BlobStore(directory: dir.path) }
        withExtendedLifetime(store) {}
    }

    @Test func listingIsBytewiseWithPrefixAndCursor() throws {
        let dir = TempDirectory()
        let store = try BlobStore(directory: dir.path)
        // Bytewise order: "B" < "a" < "a/b" < "ab" < "é" (0xC3 0xA9) < "€" (0xE2 ...).
        for key in ["é", "ab", "a", "B", "a/b", "€"] { _ = try store.put([1], as: key) }
        #expect(try store.list(limit: 100).map(\.key.rawValue) == ["B", "a", "a/b", "ab", "é", "€"])
        #expect(try store.list(prefix: Array("a".utf8), limit: 100).map(\.key.rawValue) == ["a", "a/b", "ab"])
        #expect(try store.list(prefix: Array("a".utf8), after: Array("a".utf8), limit: 1).map(\.key.rawValue) == ["a/b"])
        #expect(try store.list(after: Array("ab".utf8), limit: 100).map(\.key.rawValue) == ["é", "€"])
    }

    @Test(arguments: ["", ".", "..", "a/../b", "a/./b", "./a", "a\u{0}b", "a\u{7F}", "a\nb", String(repeating: "k", count: 1089)])
    func invalidKeys(_ key: String) {
        #expect(throws: StoreError.self) { try BlobKey(key) }
    }

    /// S3 keys: empty segments, leading and trailing slashes, and 1024 bytes under a bucket.
    @Test(arguments: ["a//b", "/a", "a/", "dir/", "/", "b/" + String(repeating: "k", count: 1024), "a/.../b", ".x"])
    func keysWithEmptySegmentsAreValid(_ key: String) throws {
        #expect(try BlobKey(key).rawValue == key)
    }

    @Test func keyBytesAreNotNormalised() throws {
        let nfc = try BlobKey("caf\u{E9}"), nfd = try BlobKey("cafe\u{301}")
        #expect(nfc != nfd)
        #expect(Set([nfc, nfd]).count == 2)
    }
}

@Suite struct GroupCommitTests {
    @Test func concurrentCommitsAllLandAndConditionsSeeEachOther() async throws {
        let dir = TempDirectory()
        let store = try BlobStore(directory: dir.path)
        // 64 distinct keys from many threads at once: all committed.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<64 {
                group.addTask { _ = try store.put(Array("blob \(i)".utf8), as: "k/\(i)") }
            }
            try await group.waitForAll()
        }
        for i in 0..<64 { #expect(try store.contents(of: "k/\(i)") == Array("blob \(i)".utf8)) }
        // 16 racing create-only commits of one key: exactly one wins.
        let outcomes = try await withThrowingTaskGroup(of: Bool.self) { group in
            for i in 0..<16 {
                group.addTask { (try? store.put(Array("racer \(i)".utf8), as: "race", if: .createOnly)) != nil }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 }.count == 1)
        #expect(filesIn(dir.path + "/blobs").count == 65)
    }
}

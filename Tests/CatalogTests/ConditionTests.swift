import Foundation
import Testing
@testable import BlobStore
@testable import CatalogPostgres
@testable import CatalogSQLite

extension CatalogConformance.Commits {
    /// The modification time of the table's stored records.
    static let presentModified: Int64 = 1_700_000_000

    /// Each kind of condition the callers use, against a stored record of version `version`
    /// modified at `presentModified`, and whether it holds when the key is absent and when it
    /// holds that record.
    static func table(_ version: String) -> [(condition: Condition, absent: Bool, present: Bool)] {
        let other = String(repeating: "b", count: 32), third = String(repeating: "c", count: 32)
        return [
            (.unconditional, true, true),
            (.createOnly, true, false),
            (.exists, false, true),
            (.ifMatch([version]), false, true),
            (.ifMatch([other, version]), false, true),
            (.ifMatch([other, third]), false, false),
            (.ifMatch([]), false, false),
            (.ifNoneMatch([version]), true, false),
            (.ifNoneMatch([other, version]), true, false),
            (.ifNoneMatch([other]), true, true),
            (.ifUnmodifiedSince(presentModified), true, true),
            (.ifUnmodifiedSince(presentModified + 1), true, true),
            (.ifUnmodifiedSince(presentModified - 1), true, false),
            (.ifUnmodifiedSince(0), true, false),
            (.modifiedAt(presentModified), false, true),
            (.modifiedAt(presentModified - 1), false, false),
            (.sizeIs(11), false, true),
            (.sizeIs(12), false, false),
        ]
    }

    static var rows: Range<Int> { table("").indices }

    /// A stored record at `key` with a new version, modified at `presentModified`.
    static func present(_ key: String) throws -> BlobRecord {
        BlobRecord(key: try BlobKey(key), version: newVersion(), size: 11, sha256: Array(repeating: 0xEE, count: 32),
                   attributes: BlobAttributes(contentType: "text/plain", userMetadata: [.init(name: "old", value: "1")]),
                   modified: presentModified, md5: Array(repeating: 0xDD, count: 16))
    }

    /// Every condition, on an absent and on a present key: the outcome (created, replaced with
    /// the previous record, or `.preconditionFailed`), what is stored after, the garbage, and
    /// the upload the commit completes (completed exactly when the commit succeeded).
    @Test(arguments: Backend.all)
    func everyConditionOnAbsentAndPresentKeys(_ backend: Backend) throws {
        let index = try backend.open()
        var failures: [String] = []
        var garbage: Set<String> = [], keys = 0
        for row in Self.rows {
            for isPresent in [false, true] {
                let key = "c\(row)-\(isPresent ? "present" : "absent")"
                let previous = isPresent ? try Self.present(key) : nil
                if let previous { try index.put(previous) }
                let entry = Self.table(previous?.version ?? newVersion())[row]
                let upload = try tusUpload()
                try index.insert(upload, owner: nil, limit: 0)
                let new = try record(key, size: UInt64(row))
                let outcome = Result { () throws(StoreError) in try index.commit(new, completingUpload: upload.id, when: entry.condition) }
                let holds = isPresent ? entry.present : entry.absent
                let expected: Result<IndexCommit, StoreError> = !holds ? .failure(.preconditionFailed)
                    : previous.map { .success(.replaced(previous: $0)) } ?? .success(.created)
                let stored = try index.record(for: new.key)
                let completed = try index.upload(upload.id)
                var wanted = upload
                if holds {
                    wanted.completedKey = new.key
                    wanted.offset = new.size
                    if let previous { garbage.insert(previous.version) }
                }
                if holds || isPresent { keys += 1 }
                if outcome != expected || stored != (holds ? new : previous) || completed != wanted {
                    failures.append("\(entry.condition) on \(isPresent ? "present" : "absent"): \(outcome), stored \(String(describing: stored))")
                }
            }
        }
        #expect(failures.isEmpty, "\(failures)")
        // The replaced versions are garbage; the refused records left nothing behind.
        #expect(Set(try index.garbage()) == garbage)
        #expect(try index.totals().count == keys)
    }

    /// Removal under every condition: `.notFound` on an absent key whatever the condition;
    /// on a present key the record when the condition holds (its version becomes garbage),
    /// else `.preconditionFailed` and the record stays.
    @Test(arguments: Backend.all)
    func removeUnderEveryCondition(_ backend: Backend) throws {
        let index = try backend.open()
        var failures: [String] = []
        var garbage: Set<String> = [], keys = 0
        for row in Self.rows {
            let present = try Self.present("r\(row)-present")
            let entry = Self.table(present.version)[row]
            let absent = try BlobKey("r\(row)-absent")
            let outcome = Result { () throws(StoreError) in try index.remove(absent, when: entry.condition) }
            if outcome != .failure(.notFound) { failures.append("\(entry.condition) on absent: \(outcome)") }
            try index.put(present)
            if entry.present { garbage.insert(present.version) } else { keys += 1 }
            let removal = Result { () throws(StoreError) in try index.remove(present.key, when: entry.condition) }
            let stored = try index.record(for: present.key)
            let expected: (Result<BlobRecord, StoreError>, BlobRecord?) = entry.present ? (.success(present), nil)
                : (.failure(.preconditionFailed), present)
            if removal != expected.0 || stored != expected.1 {
                failures.append("\(entry.condition) on present: \(removal), stored \(String(describing: stored))")
            }
        }
        #expect(failures.isEmpty, "\(failures)")
        #expect(try index.totals().count == keys)
        #expect(Set(try index.garbage()) == garbage)
    }
}

extension CatalogConformance.Commits {
    /// A caller whose grant is `create` (`WriteCondition.onlyCreate`): it creates an absent key,
    /// is refused `.createOnly` on a present one (which keeps its record and makes no garbage),
    /// and a failing header condition still answers `.preconditionFailed` first.
    @Test(arguments: Backend.all)
    func createOnlyGrantIsDecidedInTheCommit(_ backend: Backend) throws {
        let index = try backend.open()
        var onlyCreate = WriteCondition.always
        onlyCreate.onlyCreate = true
        let created = try record("grant/new")
        #expect(try index.commit(CommitRequest(created, if: onlyCreate)) == .created)
        let present = try Self.present("grant/old")
        try index.put(present)
        let replacement = try record("grant/old")
        let refused = Result { () throws(StoreError) in try index.commit(CommitRequest(replacement, if: onlyCreate)) }
        #expect(refused == .failure(.createOnly))
        var headers = WriteCondition.createOnly
        headers.onlyCreate = true
        let both = Result { () throws(StoreError) in try index.commit(CommitRequest(replacement, if: headers)) }
        #expect(both == .failure(.preconditionFailed))
        #expect(try index.record(for: present.key) == present)
        #expect(try index.garbage().isEmpty)
    }
}

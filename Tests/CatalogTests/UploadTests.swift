import Foundation
import Testing
@testable import BlobStore
@testable import CatalogPostgres
@testable import CatalogSQLite

/// A tus upload expiring at `expires` (an hour from now by default).
func tusUpload(expires: Int64? = nil, key: String? = nil) throws -> UploadRecord {
    UploadRecord(id: newVersion(), length: nil, offset: 0, hashState: [9, 8, 7], metadata: "filename aGk=", key: try key.map { try BlobKey($0) },
                 attributes: BlobAttributes(contentType: "image/png", cacheControl: "max-age=60", contentDisposition: "inline",
                                            contentEncoding: "br", expires: "0", userMetadata: [.init(name: "x", value: "y")]),
                 expires: expires ?? Int64(time(nil)) + 3600)
}

/// A tus upload with every field set, each to a value no other field has.
func fullUpload() throws -> UploadRecord {
    UploadRecord(id: newVersion(), length: 1 << 34, offset: 1 << 33, hashState: Array(0..<112), metadata: "filename aGk=,key ZnVsbA==",
                 key: try BlobKey("full/\u{E9}t\u{E9}"),
                 attributes: BlobAttributes(contentType: "image/png", cacheControl: "max-age=60", contentDisposition: "inline; filename=a.png",
                                            contentEncoding: "br", contentLanguage: "fr-CA", expires: "Thu, 01 Jan 2099 00:00:00 GMT",
                                            userMetadata: [.init(name: "a", value: "1"), .init(name: "b", value: "two words")]),
                 expires: 2_000_000_000, completedKey: try BlobKey("done/\u{10FFFF}"))
}

/// A multipart upload with every field set.
func fullMultipart() throws -> MultipartUpload {
    MultipartUpload(id: newVersion(), key: try BlobKey("mp/\u{E9}"),
                    attributes: BlobAttributes(contentType: "video/mp4", cacheControl: "private", contentDisposition: "attachment",
                                               contentEncoding: "identity", contentLanguage: "nl", expires: "-1",
                                               userMetadata: [.init(name: "k", value: "v")]),
                    created: 1_700_000_123, expires: 2_000_000_000, completedETag: "\"0123-2\"", checksum: "crc32:FULL_OBJECT",
                    lock: ObjectLock(mode: .compliance, retainUntil: 2_100_000_000, legalHold: true))
}

/// The paths of the fields of `value` that are unset: nil, empty, or zero, looking into structs
/// and arrays (`attributes.cacheControl`, `attributes.userMetadata[0].value`).
func unsetFields(of value: Any, at path: String = "") -> [String] {
    let mirror = Mirror(reflecting: value)
    switch mirror.displayStyle {
    case .optional:
        guard let wrapped = mirror.children.first?.value else { return [path] }
        return unsetFields(of: wrapped, at: path)
    case .struct where !(value is BlobKey):
        return mirror.children.flatMap { unsetFields(of: $0.value, at: path.isEmpty ? $0.label ?? "?" : path + "." + ($0.label ?? "?")) }
    case .collection where !(value is [UInt8]):
        guard !mirror.children.isEmpty else { return [path] }
        return mirror.children.enumerated().flatMap { unsetFields(of: $0.element.value, at: path + "[\($0.offset)]") }
    default:
        return "\(value)".isEmpty || "\(value)" == "0" || "\(value)" == "[]" ? [path] : []
    }
}

/// The names of the stored properties of `value`.
func fieldNames(of value: Any) -> Set<String> {
    Set(Mirror(reflecting: value).children.compactMap(\.label))
}

/// The stored properties of `a` and `b` (of one type) that differ, by name.
func differingFields<T>(_ a: T, _ b: T) -> Set<String> {
    Set(zip(Mirror(reflecting: a).children, Mirror(reflecting: b).children).compactMap { pair in
        "\(pair.0.value)" == "\(pair.1.value)" ? nil : pair.0.label
    })
}

/// A multipart upload expiring at `expires` (an hour from now by default).
func multipartUpload(_ key: String, created: Int64 = 1_700_000_000, expires: Int64? = nil) throws -> MultipartUpload {
    MultipartUpload(id: newVersion(), key: try BlobKey(key),
                    attributes: BlobAttributes(contentType: "text/plain", contentLanguage: "de", userMetadata: [.init(name: "m", value: "1")]),
                    created: created, expires: expires ?? Int64(time(nil)) + 3600, checksum: "sha256:COMPOSITE")
}

extension CatalogConformance {
    /// Resumable (tus) uploads: records, progress, expiry, and the per-owner limit.
    @Suite struct Uploads {
        /// Insert, read back, save progress (offset, hash state, length, expiry), remove.
        @Test(arguments: Backend.all)
        func lifecycle(_ backend: Backend) throws {
            let index = try backend.open()
            var upload = try tusUpload(key: "dir/\u{E9}")
            #expect(try index.upload(upload.id) == nil)
            try index.insert(upload, owner: "alice", limit: 0)
            #expect(try index.upload(upload.id) == upload)
            #expect(throws: StoreError.self) { try index.insert(upload, owner: nil, limit: 0) }
            for offset: UInt64 in [5, 1 << 33] {
                upload.offset = offset
                upload.hashState = Array(repeating: UInt8(offset & 0xFF), count: 112)
                upload.length = 1 << 34
                upload.expires += 60
                try index.save(upload)
                #expect(try index.upload(upload.id) == upload)
            }
            #expect(try index.unfinishedUploads() == [upload.id])
            try index.removeUpload(upload.id)
            #expect(try index.upload(upload.id) == nil)
            #expect(try index.unfinishedUploads().isEmpty)
        }

        /// An upload with nothing optional (deferred length, no key, empty hash state and
        /// metadata, no attribute but the media type) reads back as it went in; saving an
        /// unknown id adds nothing; removing one is not an error.
        @Test(arguments: Backend.all)
        func minimalUploadRoundTrips(_ backend: Backend) throws {
            let index = try backend.open()
            var upload = UploadRecord(id: newVersion(), length: nil, offset: 0, hashState: [], metadata: "", key: nil,
                                      attributes: BlobAttributes(contentType: "application/octet-stream"), expires: 0)
            try index.insert(upload, owner: nil, limit: 0)
            #expect(try index.upload(upload.id) == upload)
            upload.length = 0
            upload.completedKey = try BlobKey("\u{10FFFF}")
            try index.save(upload)
            #expect(try index.upload(upload.id) == upload)
            #expect(try index.unfinishedUploads().isEmpty)
            let unknown = try tusUpload()
            try index.save(unknown)
            #expect(try index.upload(unknown.id) == nil)
            try index.removeUpload(unknown.id)
            #expect(try index.expiredUploads(now: 0) == [upload.id])
        }

        /// Every field of an upload (each set, checked by `unsetFields`, so that a field added
        /// to `UploadRecord` or `BlobAttributes` fails here until the fixture, and so the
        /// codecs, carry it) reads back as it went in, and again after a save that changes
        /// every field but the id.
        @Test(arguments: Backend.all)
        func everyFieldRoundTrips(_ backend: Backend) throws {
            let index = try backend.open()
            let upload = try fullUpload()
            #expect(unsetFields(of: upload).isEmpty, "every field is set: \(unsetFields(of: upload))")
            try index.insert(upload, owner: "dave", limit: 0)
            #expect(try index.upload(upload.id) == upload)
            let changed = UploadRecord(
                id: upload.id, length: 1 << 40, offset: 1 << 35, hashState: Array(repeating: 0xEE, count: 112), metadata: "other b3RoZXI=",
                key: try BlobKey("round/trip/\u{1F600}"),
                attributes: BlobAttributes(contentType: "text/csv; charset=utf-8", cacheControl: "no-cache", contentDisposition: "attachment",
                                           contentEncoding: "gzip", contentLanguage: "en-GB, cy", expires: "Fri, 01 Jan 2100 00:00:00 GMT",
                                           userMetadata: [.init(name: "p", value: "q r"), .init(name: "z", value: "")]),
                expires: upload.expires + 1, completedKey: try BlobKey("round/trip/\u{1F600}"))
            #expect(differingFields(upload, changed) == fieldNames(of: upload).subtracting(["id"]), "the save changes every column")
            try index.save(changed)
            #expect(try index.upload(upload.id) == changed)
            // A second upload beside it keeps its own row.
            var other = try fullUpload()
            other.attributes.contentLanguage = "mi"
            try index.insert(other, owner: nil, limit: 0)
            #expect(try index.upload(other.id) == other)
            #expect(try index.upload(upload.id) == changed)
        }

        /// Every field of a multipart upload and of its parts reads back as it went in.
        @Test(arguments: Backend.all)
        func everyMultipartFieldRoundTrips(_ backend: Backend) throws {
            let index = try backend.open()
            let upload = try fullMultipart()
            #expect(unsetFields(of: upload).isEmpty, "every field is set: \(unsetFields(of: upload))")
            try index.insertMultipart(upload, owner: "dave", limit: 0)
            #expect(try index.multipart(upload.id) == upload)
            #expect(try index.multipartUploads(prefix: Array("mp/".utf8)) == [], "a completed upload is not listed")
            var open = upload
            open.completedETag = nil
            open.id = newVersion()
            try index.insertMultipart(open, owner: nil, limit: 0)
            #expect(try index.multipartUploads(prefix: Array("mp/".utf8)) == [open])
            let part = UploadedPart(number: 10_000, size: 5 << 30, md5: Array(0..<16), modified: 1_800_000_000, checksum: "q83vEg==")
            #expect(unsetFields(of: part).isEmpty)
            #expect(try index.savePart(part, of: open.id) == nil)
            #expect(try index.parts(of: open.id) == [part])
        }

        /// The expiry sweep finds the uploads whose expiry is at or before `now`, finished or not.
        @Test(arguments: Backend.all)
        func expirySweep(_ backend: Backend) throws {
            let index = try backend.open()
            let now: Int64 = 2_000_000_000
            let past = try tusUpload(expires: now - 1), due = try tusUpload(expires: now), later = try tusUpload(expires: now + 1)
            for upload in [past, due, later] { try index.insert(upload, owner: nil, limit: 0) }
            var done = past
            done.completedKey = try BlobKey("finished")
            try index.save(done)
            #expect(Set(try index.expiredUploads(now: now)) == [past.id, due.id])
            #expect(Set(try index.expiredUploads(now: .max)) == [past.id, due.id, later.id])
            #expect(try index.expiredUploads(now: 0).isEmpty)
            #expect(Set(try index.unfinishedUploads()) == [due.id, later.id])
        }

        /// --max-open-uploads: an owner with `limit` unfinished, unexpired uploads (tus and
        /// multipart together) is refused another; finished, expired and removed uploads do not
        /// count, nor do other owners', and no owner or limit 0 means no limit.
        @Test(arguments: Backend.all)
        func ownerLimit(_ backend: Backend) throws {
            let index = try backend.open()
            let first = try tusUpload()
            try index.insert(first, owner: "alice", limit: 3)
            try index.insertMultipart(try multipartUpload("b/k"), owner: "alice", limit: 3)
            try index.insert(try tusUpload(), owner: "alice", limit: 3)
            #expect(throws: StoreError.tooManyUploads(limit: 3)) { try index.insert(try tusUpload(), owner: "alice", limit: 3) }
            #expect(throws: StoreError.tooManyUploads(limit: 3)) {
                try index.insertMultipart(try multipartUpload("b/k"), owner: "alice", limit: 3)
            }
            try index.insert(try tusUpload(), owner: "bob", limit: 3)
            try index.insert(try tusUpload(), owner: nil, limit: 3)
            try index.insert(try tusUpload(), owner: "alice", limit: 0)
            // Four open now. Finished and expired uploads do not count, removed ones neither.
            #expect(throws: StoreError.tooManyUploads(limit: 4)) { try index.insert(try tusUpload(), owner: "alice", limit: 4) }
            var finished = first
            finished.completedKey = try BlobKey("x")
            try index.save(finished)
            try index.insert(try tusUpload(expires: Int64(time(nil)) - 10), owner: "alice", limit: 0)
            let fourth = try tusUpload()
            try index.insert(fourth, owner: "alice", limit: 4)
            #expect(throws: StoreError.tooManyUploads(limit: 4)) { try index.insert(try tusUpload(), owner: "alice", limit: 4) }
            try index.removeUpload(fourth.id)
            try index.insert(try tusUpload(), owner: "alice", limit: 4)
        }

        /// Multipart uploads count toward the limit until completed or aborted.
        @Test(arguments: Backend.all)
        func ownerLimitCountsOpenMultipartOnly(_ backend: Backend) throws {
            let index = try backend.open()
            let done = try multipartUpload("b/1"), aborted = try multipartUpload("b/2")
            try index.insertMultipart(done, owner: "erin", limit: 2)
            try index.insertMultipart(aborted, owner: "erin", limit: 2)
            #expect(throws: StoreError.tooManyUploads(limit: 2)) { try index.insertMultipart(try multipartUpload("b/3"), owner: "erin", limit: 2) }
            try index.markCompleted(done.id, etag: "\"x\"", checksum: nil)
            try index.insertMultipart(try multipartUpload("b/3"), owner: "erin", limit: 2)
            try index.removeMultipart(aborted.id)
            try index.insert(try tusUpload(), owner: "erin", limit: 2)
            #expect(throws: StoreError.tooManyUploads(limit: 2)) { try index.insert(try tusUpload(), owner: "erin", limit: 2) }
        }

        /// N threads of one owner start uploads at once under a limit of 3: exactly 3 get in.
        @Test(arguments: Backend.all)
        func ownerLimitUnderConcurrency(_ backend: Backend) throws {
            let index = try backend.open()
            let uploads = try (0..<12).map { _ in try tusUpload() }
            let outcomes = concurrently(uploads.count) { i in
                Result { () throws(StoreError) in try index.insert(uploads[i], owner: "carol", limit: 3) }
            }
            #expect(outcomes.filter { (try? $0.get()) != nil }.count == 3)
            #expect(outcomes.filter { if case .failure(.tooManyUploads(3)) = $0 { true } else { false } }.count == 9)
            #expect(try index.unfinishedUploads().count == 3)
        }
    }
}

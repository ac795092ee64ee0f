import Foundation
import Testing
@testable import BlobStore

extension CatalogConformance {
    /// S3 multipart uploads: create, parts, complete, abort, expiry.
    @Suite struct Multipart {
        /// Create and read back; listed by key then start time, under a prefix, unfinished only.
        @Test(arguments: Backend.all)
        func createAndList(_ backend: Backend) throws {
            let index = try backend.open()
            let later = try multipartUpload("bkt/b", created: 20), earlier = try multipartUpload("bkt/b", created: 10)
            let a = try multipartUpload("bkt/a\u{E9}", created: 30), other = try multipartUpload("other/a", created: 5)
            for upload in [later, earlier, a, other] { try index.insertMultipart(upload, owner: nil, limit: 0) }
            #expect(try index.multipart(a.id) == a)
            #expect(try index.multipart(newVersion()) == nil)
            #expect(try index.multipartUploads(prefix: Array("bkt/".utf8)) == [a, earlier, later])
            #expect(try index.multipartUploads(prefix: []).count == 4)
            #expect(try index.multipartUploads(prefix: [0x62, 0x6B, 0x74, 0x2F, 0x61, 0xC3]) == [a])
            #expect(try index.multipartUploads(prefix: [0xFF]).isEmpty)
        }

        /// Parts: the first save of a number returns nil, a replacement the part it replaced;
        /// listed by number; refused for an unknown upload.
        @Test(arguments: Backend.all)
        func parts(_ backend: Backend) throws {
            let index = try backend.open()
            let upload = try multipartUpload("bkt/k")
            try index.insertMultipart(upload, owner: nil, limit: 0)
            let two = UploadedPart(number: 2, size: 5 << 20, md5: Array(repeating: 2, count: 16), modified: 100, checksum: "Ag==")
            let one = UploadedPart(number: 1, size: 5 << 20, md5: Array(repeating: 1, count: 16), modified: 101, checksum: nil)
            let ten = UploadedPart(number: 10_000, size: 1, md5: Array(repeating: 10, count: 16), modified: 102, checksum: "Cg==")
            for part in [two, ten, one] { #expect(try index.savePart(part, of: upload.id) == nil) }
            #expect(try index.parts(of: upload.id) == [one, two, ten])
            var newTwo = two
            newTwo.size = 7
            newTwo.md5 = Array(repeating: 22, count: 16)
            #expect(try index.savePart(newTwo, of: upload.id) == two)
            #expect(try index.parts(of: upload.id) == [one, newTwo, ten])
            #expect(throws: StoreError.uploadNotFound) { try index.savePart(one, of: newVersion()) }
            #expect(try index.parts(of: newVersion()).isEmpty)
        }

        /// Complete: the ETag and the object's checksum are kept, the parts dropped, the upload no
        /// longer listed and closed to parts. Abort: upload and parts gone.
        @Test(arguments: Backend.all)
        func completeAndAbort(_ backend: Backend) throws {
            let index = try backend.open()
            let done = try multipartUpload("bkt/done"), aborted = try multipartUpload("bkt/aborted")
            let part = UploadedPart(number: 1, size: 3, md5: Array(repeating: 1, count: 16), modified: 1)
            for upload in [done, aborted] {
                try index.insertMultipart(upload, owner: nil, limit: 0)
                _ = try index.savePart(part, of: upload.id)
            }
            try index.markCompleted(done.id, etag: "\"abc-1\"", checksum: "sha256:XYZ=-1")
            var completed = done
            completed.completedETag = "\"abc-1\""
            completed.checksum = "sha256:XYZ=-1"
            #expect(try index.multipart(done.id) == completed)
            #expect(try index.parts(of: done.id).isEmpty)
            #expect(try index.multipartUploads(prefix: []) == [aborted])
            #expect(throws: StoreError.uploadNotFound) { try index.savePart(part, of: done.id) }
            try index.removeMultipart(aborted.id)
            #expect(try index.multipart(aborted.id) == nil)
            #expect(try index.parts(of: aborted.id).isEmpty)
            #expect(try index.multipartUploads(prefix: []).isEmpty)
        }

        /// The expiry sweep finds the uploads whose expiry is at or before `now`, completed
        /// ones too (their record goes when they expire); aborted ones are gone.
        @Test(arguments: Backend.all)
        func expirySweep(_ backend: Backend) throws {
            let index = try backend.open()
            let due = try multipartUpload("k", expires: 1000), later = try multipartUpload("k", expires: 1001)
            let completed = try multipartUpload("k", expires: 999), aborted = try multipartUpload("k", expires: 999)
            for upload in [due, later, completed, aborted] { try index.insertMultipart(upload, owner: nil, limit: 0) }
            try index.markCompleted(completed.id, etag: "\"e\"", checksum: nil)
            try index.removeMultipart(aborted.id)
            #expect(Set(try index.expiredMultipartUploads(now: 1000)) == [due.id, completed.id])
            #expect(Set(try index.expiredMultipartUploads(now: 1001)) == [due.id, later.id, completed.id])
            #expect(try index.expiredMultipartUploads(now: 998).isEmpty)
        }

        /// An upload with nothing optional (no checksum, no attributes but the media type) reads
        /// back as it went in; completing it without a checksum keeps none; a part without a
        /// checksum and one of the largest size round-trip.
        @Test(arguments: Backend.all)
        func minimalUploadRoundTrips(_ backend: Backend) throws {
            let index = try backend.open()
            let upload = MultipartUpload(id: newVersion(), key: try BlobKey("bkt/\u{10FFFF}"), attributes: BlobAttributes(),
                                         created: 0, expires: Int64.max)
            try index.insertMultipart(upload, owner: nil, limit: 0)
            #expect(try index.multipart(upload.id) == upload)
            let big = UploadedPart(number: 1, size: UInt64(Int64.max), md5: Array(repeating: 0xFF, count: 16), modified: -1)
            #expect(try index.savePart(big, of: upload.id) == nil)
            #expect(try index.parts(of: upload.id) == [big])
            try index.markCompleted(upload.id, etag: "\"d41d8cd98f00b204e9800998ecf8427e-1\"", checksum: nil)
            #expect(try index.multipart(upload.id)?.completedETag == "\"d41d8cd98f00b204e9800998ecf8427e-1\"")
            #expect(try index.multipart(upload.id)?.checksum == nil)
            #expect(try index.expiredMultipartUploads(now: .max - 1).isEmpty)
        }
    }

    /// S3 buckets.
    @Suite struct Buckets {
        /// Create twice (the second says it exists and changes nothing), read, list in byte order.
        @Test(arguments: Backend.all)
        func createAndList(_ backend: Backend) throws {
            let index = try backend.open()
            let names = ["b", "a0", "a.b", "a-b", "ab", "a", "Zed", "aB", "a_b", "a~"]
            for name in names { #expect(try index.createBucket(Bucket(name: name, created: 1_700_000_000))) }
            #expect(try !index.createBucket(Bucket(name: "ab", created: 5, region: "eu-west-1")))
            #expect(try index.bucket("ab") == Bucket(name: "ab", created: 1_700_000_000))
            #expect(try index.createBucket(Bucket(name: "eu", created: 7, region: "eu-west-1")))
            #expect(try index.bucket("eu") == Bucket(name: "eu", created: 7, region: "eu-west-1"))
            #expect(try index.bucket("nope") == nil)
            // Byte order, not a locale's: "Zed" first, "aB" before "a_b" before "ab".
            #expect(try index.buckets().map(\.name) == ["Zed", "a", "a-b", "a.b", "a0", "aB", "a_b", "ab", "a~", "b", "eu"])
            #expect(try index.buckets().first == Bucket(name: "Zed", created: 1_700_000_000))
        }

        /// Removal: unknown is `.bucketNotFound`; a bucket holding a key under `NAME/` is
        /// `.bucketNotEmpty` (keys of other buckets sharing its name's start do not count);
        /// once empty it goes, and is gone for reads too.
        @Test(arguments: Backend.all)
        func remove(_ backend: Backend) throws {
            let index = try backend.open()
            #expect(throws: StoreError.bucketNotFound) { try index.removeBucket("bkt") }
            _ = try index.createBucket(Bucket(name: "bkt", created: 1))
            #expect(try index.bucket("bkt") != nil)
            for key in ["bkt2/x", "bkt", "bkt.x", "bk/x"] { try index.put(try record(key)) }
            let inside = try record("bkt/\u{10FFFF}")
            try index.put(inside)
            #expect(throws: StoreError.bucketNotEmpty) { try index.removeBucket("bkt") }
            #expect(try index.bucket("bkt") != nil)
            _ = try index.remove(inside.key, when: .unconditional)
            try index.removeBucket("bkt")
            #expect(try index.bucket("bkt") == nil)
            #expect(try index.buckets().isEmpty)
            #expect(throws: StoreError.bucketNotFound) { try index.removeBucket("bkt") }
            #expect(try index.createBucket(Bucket(name: "bkt", created: 2)))
        }
    }
}

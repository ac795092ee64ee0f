import Foundation
import Testing
@testable import BlobStore
@testable import CatalogPostgres
@testable import CatalogSQLite

extension CatalogConformance {
    /// `blobd migrate-index`'s path from one backend to the other: what a single node's SQLite
    /// index exports, PostgreSQL imports with every field and owner.
    @Suite(.enabled(if: TestPostgres.isInstalled, "PostgreSQL 15 is installed by make deps"))
    struct Import {
        /// Every tus upload (finished or not) and every unfinished multipart upload with its parts
        /// reads back from PostgreSQL as SQLite held it; the owners came along, so that the
        /// moved uploads count toward --max-open-uploads; importing again changes nothing.
        @Test func uploadsKeepEveryFieldAndTheirOwners() throws {
            let source = try SQLiteBlobIndex(path: try CatalogRun.newDirectory() + "/index.sqlite")
            let finished = try fullUpload(), open = try tusUpload(), ownerless = try tusUpload()
            try source.insert(finished, owner: "alice", limit: 0)
            try source.insert(open, owner: "alice", limit: 0)
            try source.insert(ownerless, owner: nil, limit: 0)
            var multipart = try fullMultipart()
            multipart.completedETag = nil
            try source.insertMultipart(multipart, owner: "bob", limit: 0)
            let parts = [UploadedPart(number: 1, size: 5 << 20, md5: Array(repeating: 1, count: 16), modified: 7, checksum: "AQ=="),
                         UploadedPart(number: 4, size: 1, md5: Array(repeating: 4, count: 16), modified: 8)]
            for part in parts { _ = try source.savePart(part, of: multipart.id) }
            let completed = try multipartUpload("b/done")
            try source.insertMultipart(completed, owner: "bob", limit: 0)
            try source.markCompleted(completed.id, etag: "\"e\"", checksum: nil)

            let uploads = try source.exportUploads()
            #expect(Dictionary(uniqueKeysWithValues: uploads.map { ($0.upload.id, $0.owner) })
                    == [finished.id: "alice", open.id: "alice", ownerless.id: nil])
            let unfinished = try source.exportMultipart()
            #expect(unfinished.count == 1)
            #expect(unfinished.first?.upload == multipart && unfinished.first?.owner == "bob" && unfinished.first?.parts == parts)

            let target = try PostgresBlobIndex(url: try TestPostgres.running().freshURL(), connections: 4)
            for _ in 0..<2 {
                #expect(try target.importBatch(records: [], uploads: uploads, multipart: unfinished) == 0)
                for upload in [finished, open, ownerless] { #expect(try target.upload(upload.id) == upload) }
                #expect(try target.multipart(multipart.id) == multipart)
                #expect(try target.parts(of: multipart.id) == parts)
                #expect(try target.multipart(completed.id) == nil)
            }
            #expect(throws: StoreError.tooManyUploads(limit: 1)) { try target.insert(try tusUpload(), owner: "alice", limit: 1) }
            #expect(throws: StoreError.tooManyUploads(limit: 1)) { try target.insertMultipart(try multipartUpload("b/x"), owner: "bob", limit: 1) }
            try target.insert(try tusUpload(), owner: "carol", limit: 1)
        }
    }
}

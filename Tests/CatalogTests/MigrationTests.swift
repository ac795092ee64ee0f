import Foundation
import GRDB
import Testing
@testable import BlobStore
@testable import CatalogPostgres
@testable import CatalogSQLite

extension CatalogConformance {
    /// An index made by the oldest schema version opens, migrates, and keeps its rows.
    @Suite struct Migrations {
        /// The first schema's blob record and upload read back unchanged, and what later
        /// versions added (attributes, multipart, buckets with regions, upload owners) works.
        @Test(arguments: Backend.all)
        func firstSchemaMigrates(_ backend: Backend) throws {
            let index = try backend.openFirstSchema()
            #expect(try index.record(for: FirstSchema.record.key) == FirstSchema.record)
            #expect(try index.upload(FirstSchema.upload.id) == FirstSchema.upload)
            #expect(try index.list(prefix: [], after: nil, limit: 10) == [FirstSchema.record])
            #expect(try index.unfinishedUploads() == [FirstSchema.upload.id])

            let full = BlobRecord(key: try BlobKey("new"), version: newVersion(), size: 9, sha256: Array(repeating: 1, count: 32),
                                  attributes: BlobAttributes(contentType: "a/b", contentLanguage: "en", userMetadata: [.init(name: "k", value: "v")]),
                                  modified: 1, md5: Array(repeating: 2, count: 16), parts: 2, partSizes: [5, 4], partChecksums: ["A", "B"],
                                  checksum: "crc32:AAAA-2")
            try index.put(full)
            #expect(try index.record(for: full.key) == full)
            #expect(try index.createBucket(Bucket(name: "b", created: 1, region: "eu-west-1")))
            #expect(try index.bucket("b")?.region == "eu-west-1")
            let upload = try multipartUpload("b/k")
            try index.insertMultipart(upload, owner: "o", limit: 1)
            #expect(throws: StoreError.tooManyUploads(limit: 1)) { try index.insert(try tusUpload(), owner: "o", limit: 1) }
            let part = UploadedPart(number: 1, size: 1, md5: Array(repeating: 3, count: 16), modified: 1, checksum: "Aw==")
            _ = try index.savePart(part, of: upload.id)
            #expect(try index.parts(of: upload.id) == [part])
        }

        /// SQLite only: an index made before migrations were recorded (the tables of "1-tables"
        /// and no grdb_migrations) opens, and its rows stay.
        @Test func sqliteBeforeMigrationsWereRecorded() throws {
            let path = try CatalogRun.newDirectory() + "/index.sqlite"
            do {
                let queue = try DatabaseQueue(path: path)
                try SQLiteBlobIndex.migrator.migrate(queue, upTo: "1-tables")
                try queue.write { db in
                    try db.execute(sql: "DROP TABLE grdb_migrations")
                    let record = FirstSchema.record
                    try db.execute(sql: "INSERT INTO blobs (key, version, size, sha256, content_type, modified) VALUES (?, ?, ?, ?, ?, ?)",
                                   arguments: [Data(record.key.bytes), record.version, Int64(record.size), Data(record.sha256),
                                               record.contentType, record.modified])
                }
            }
            let index = try SQLiteBlobIndex(path: path)
            #expect(try index.record(for: FirstSchema.record.key) == FirstSchema.record)
            #expect(try index.createBucket(Bucket(name: "b", created: 1, region: "r")))
        }
    }
}

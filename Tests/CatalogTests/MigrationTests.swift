import Foundation
import GRDB
import Testing
@testable import BlobStore
@testable import CatalogPostgres
@testable import CatalogSQLite

extension CatalogConformance {
    /// An index made by the oldest schema version opens, migrates, and keeps its rows.
    @Suite struct Migrations {
        /// Every row the first schema held reads back unchanged, column by column (what later
        /// versions added is empty), and it is listed, counted and swept as new rows are.
        @Test(arguments: Backend.all)
        func firstSchemaKeepsEveryRow(_ backend: Backend) throws {
            let (index, old) = try backend.openFirstSchema()
            for record in old.records { #expect(try index.record(for: record.key) == record) }
            let sorted = old.records.sorted { $0.key.bytes.lexicographicallyPrecedes($1.key.bytes) }
            #expect(try index.list(prefix: [], after: nil, limit: 100) == sorted)
            #expect(try index.totals() == (old.records.count, old.records.reduce(0) { $0 + $1.size }))
            #expect(try index.allVersions() == Set(old.records.map(\.version)))
            for folder in Set(old.records.map { String($0.version.prefix(2)) }) {
                #expect(try index.versions(inFolder: folder) == Set(old.records.map(\.version).filter { $0.hasPrefix(folder) }))
            }
            for upload in old.uploads { #expect(try index.upload(upload.id) == upload) }
            #expect(Set(try index.unfinishedUploads()) == Set(old.uploads.filter { !$0.isComplete }.map(\.id)))
            #expect(Set(try index.expiredUploads(now: 1)) == Set(old.uploads.filter { $0.expires <= 1 }.map(\.id)))
            #expect(Set(try index.garbage()) == Set(old.garbage))
            #expect(try index.buckets() == old.buckets.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) })
            for (upload, parts) in old.multipart {
                #expect(try index.multipart(upload.id) == upload)
                #expect(try index.parts(of: upload.id) == parts)
            }
            #expect(try index.multipartUploads(prefix: []) == old.multipart.map(\.upload))
        }

        /// After migrating, what later versions added works on the old rows and new ones:
        /// every attribute (an upload's Content-Language too), multipart with checksums, buckets
        /// with regions, upload owners.
        @Test(arguments: Backend.all)
        func firstSchemaTakesEveryLaterColumn(_ backend: Backend) throws {
            let (index, old) = try backend.openFirstSchema()
            let full = distinctCandidate(try BlobKey("new"), 5)
            try index.put(full)
            #expect(try index.record(for: full.key) == full)
            let replacement = distinctCandidate(old.records[0].key, 6)
            #expect(try index.commit(replacement, when: .ifMatch([old.records[0].version])) == .replaced(previous: old.records[0]))
            #expect(try index.record(for: replacement.key) == replacement)
            #expect(try index.createBucket(Bucket(name: "b", created: 1, region: "eu-west-1")))
            #expect(try index.bucket("b")?.region == "eu-west-1")
            let upload = try multipartUpload("b/k")
            try index.insertMultipart(upload, owner: "o", limit: 1)
            #expect(try index.multipart(upload.id) == upload)
            #expect(throws: StoreError.tooManyUploads(limit: 1)) { try index.insert(try tusUpload(), owner: "o", limit: 1) }
            let part = UploadedPart(number: 1, size: 1, md5: Array(repeating: 3, count: 16), modified: 1, checksum: "Aw==")
            _ = try index.savePart(part, of: upload.id)
            #expect(try index.parts(of: upload.id) == [part])
            var progressed = old.uploads[0]
            progressed.offset += 1
            progressed.attributes.userMetadata = [.init(name: "x", value: "y")]
            progressed.attributes.contentLanguage = "da"
            try index.save(progressed)
            #expect(try index.upload(progressed.id) == progressed)
            let fullTus = try fullUpload()
            try index.insert(fullTus, owner: "o2", limit: 0)
            #expect(try index.upload(fullTus.id) == fullTus)
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

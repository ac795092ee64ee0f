import Foundation
import GRDB
import PostgresClient
@testable import BlobStore

/// What a catalog made by its backend's first schema version held, written there with raw SQL
/// as that version stored it, and what today's code must read back after migrating.
struct FirstSchemaContent: Sendable {
    var records: [BlobRecord]
    var uploads: [UploadRecord]
    var garbage: [String]
    var buckets: [Bucket] = []
    var multipart: [(upload: MultipartUpload, parts: [UploadedPart])] = []
}

enum FirstSchema {
    static let record = BlobRecord(key: try! BlobKey("old/caf\u{E9}"), version: "0123456789abcdef0123456789abcdef", size: 5,
                                   sha256: Array(repeating: 0xAB, count: 32), contentType: "text/plain", modified: 1_600_000_000)
    static let upload = UploadRecord(id: "fedcba9876543210fedcba9876543210", length: 10, offset: 4, hashState: [1, 2, 3],
                                     metadata: "filename Zm9v", key: try! BlobKey("old/upload"),
                                     attributes: BlobAttributes(contentType: "text/csv"), expires: 4_102_444_800)

    /// What every backend's first schema could hold: records and tus uploads with no attribute
    /// but the media type, and garbage.
    static let common = FirstSchemaContent(records: [
        record,
        BlobRecord(key: try! BlobKey("old/\u{10FFFF}\u{80}"), version: "ff" + String(repeating: "9", count: 30), size: 1 << 40,
                   sha256: (0..<32).map { UInt8($0) }, contentType: "", modified: 0),
        BlobRecord(key: try! BlobKey("old/a b/~"), version: "09" + String(repeating: "a", count: 30), size: 0,
                   sha256: Array(repeating: 0, count: 32), contentType: "application/x-empty", modified: -1),
    ], uploads: [
        upload,
        UploadRecord(id: "00000000000000000000000000000001", length: nil, offset: 0, hashState: [], metadata: "", key: nil,
                     attributes: BlobAttributes(contentType: "application/octet-stream"), expires: 1),
        UploadRecord(id: "00000000000000000000000000000002", length: 5, offset: 5, hashState: Array(repeating: 7, count: 112),
                     metadata: "a YQ==,b", key: nil, attributes: BlobAttributes(contentType: "text/plain"), expires: 4_102_444_800,
                     completedKey: try! BlobKey("old/caf\u{E9}")),
    ], garbage: ["11111111111111111111111111111111", "22222222222222222222222222222222"])

    // MARK: SQLite: "1-tables"

    /// A database at SQLite's first schema version holding `common`.
    static func sqlite(at path: String) throws {
        let queue = try DatabaseQueue(path: path)
        try SQLiteBlobIndex.migrator.migrate(queue, upTo: "1-tables")
        try queue.write { db in
            for record in common.records {
                try db.execute(sql: "INSERT INTO blobs (key, version, size, sha256, content_type, modified) VALUES (?, ?, ?, ?, ?, ?)",
                               arguments: [Data(record.key.bytes), record.version, Int64(record.size), Data(record.sha256),
                                           record.contentType, record.modified])
            }
            for upload in common.uploads {
                try db.execute(sql: """
                    INSERT INTO uploads (id, length, offset, hash_state, metadata, key, content_type, expires, completed_key)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [upload.id, upload.length.map { Int64($0) }, Int64(upload.offset), Data(upload.hashState),
                                     upload.metadata, upload.key.map { Data($0.bytes) }, upload.attributes.contentType, upload.expires,
                                     upload.completedKey.map { Data($0.bytes) }])
            }
            for version in common.garbage { try db.execute(sql: "INSERT INTO garbage (version) VALUES (?)", arguments: [version]) }
        }
    }

    // MARK: PostgreSQL: "1-tables"

    /// What PostgreSQL's first schema could hold besides `common`: the attributes of step 1,
    /// buckets, multipart uploads and their parts.
    static let postgresContent: FirstSchemaContent = {
        var content = common
        let attributes = BlobAttributes(contentType: "text/html", cacheControl: "no-store", contentDisposition: "inline",
                                        contentEncoding: "gzip", expires: "Thu, 01 Jan 2099 00:00:00 GMT",
                                        userMetadata: [.init(name: "a", value: "1"), .init(name: "b", value: "two: 2")])
        content.records.append(BlobRecord(key: try! BlobKey("bkt/obj"), version: "abcdef" + String(repeating: "0", count: 26), size: 10,
                                          sha256: Array(repeating: 3, count: 32), attributes: attributes, modified: 1_650_000_000,
                                          md5: Array(repeating: 4, count: 16), parts: 2, checksum: "crc32:AAAAAA==-2"))
        content.uploads.append(UploadRecord(id: "00000000000000000000000000000003", length: 9, offset: 3, hashState: [5],
                                            metadata: "", key: try! BlobKey("bkt/tus"), attributes: attributes, expires: 4_102_444_800))
        content.buckets = [Bucket(name: "bkt", created: 1_650_000_000), Bucket(name: "Zed", created: 1)]
        let upload = MultipartUpload(id: "00000000000000000000000000000004", key: try! BlobKey("bkt/mp"), attributes: attributes,
                                     created: 1_650_000_001, expires: 4_102_444_800)
        content.multipart = [(upload, [UploadedPart(number: 1, size: 5 << 20, md5: Array(repeating: 6, count: 16), modified: 1),
                                       UploadedPart(number: 3, size: 1, md5: Array(repeating: 7, count: 16), modified: 2)])]
        return content
    }()

    /// The schema at PostgreSQL's first step, in the role's own schema, holding `postgresContent`.
    static func postgres(at url: String) throws {
        let connection = try PostgresConnection(url)
        try connection.simple("CREATE TABLE blobd_migrations (name text PRIMARY KEY, applied bigint NOT NULL)")
        try connection.simple(PostgresSchema.steps[0].sql)
        try connection.execute("INSERT INTO blobd_migrations (name, applied) VALUES ($1, 0)", [.text(PostgresSchema.steps[0].name)])
        let content = postgresContent
        for record in content.records {
            let a = record.attributes
            try connection.execute("""
                INSERT INTO blobs (key, version, size, sha256, content_type, modified, cache_control, content_disposition,
                                   content_encoding, expires, user_metadata, md5, parts, checksum)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
                """, [.bytes(record.key.bytes), .text(record.version), .int(Int64(record.size)), .bytes(record.sha256),
                      .text(record.contentType), .int(record.modified), text(a.cacheControl), text(a.contentDisposition),
                      text(a.contentEncoding), text(a.expires), text(metadataText(a)), record.md5.map { .bytes($0) } ?? .null,
                      record.parts.map { .int(Int64($0)) } ?? .null, text(record.checksum)])
        }
        for upload in content.uploads {
            let a = upload.attributes
            try connection.execute("""
                INSERT INTO uploads (id, length, "offset", hash_state, metadata, key, content_type, expires, completed_key,
                                     cache_control, content_disposition, content_encoding, expires_header, user_metadata)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
                """, [.text(upload.id), upload.length.map { .int(Int64($0)) } ?? .null, .int(Int64(upload.offset)),
                      .bytes(upload.hashState), .text(upload.metadata), upload.key.map { .bytes($0.bytes) } ?? .null,
                      .text(a.contentType), .int(upload.expires), upload.completedKey.map { .bytes($0.bytes) } ?? .null,
                      text(a.cacheControl), text(a.contentDisposition), text(a.contentEncoding), text(a.expires), text(metadataText(a))])
        }
        for version in content.garbage {
            try connection.execute("INSERT INTO garbage (version, since) VALUES ($1, 0)", [.text(version)])
        }
        for bucket in content.buckets {
            try connection.execute("INSERT INTO buckets (name, created) VALUES ($1, $2)", [.text(bucket.name), .int(bucket.created)])
        }
        for (upload, parts) in content.multipart {
            let a = upload.attributes
            try connection.execute("""
                INSERT INTO multipart_uploads (id, key, content_type, cache_control, content_disposition, content_encoding,
                                               expires_header, user_metadata, created, expires, completed_etag)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, NULL)
                """, [.text(upload.id), .bytes(upload.key.bytes), .text(a.contentType), text(a.cacheControl), text(a.contentDisposition),
                      text(a.contentEncoding), text(a.expires), text(metadataText(a)), .int(upload.created), .int(upload.expires)])
            for part in parts {
                try connection.execute("INSERT INTO multipart_parts (upload, number, size, md5, modified) VALUES ($1, $2, $3, $4, $5)",
                                       [.text(upload.id), .int(Int64(part.number)), .int(Int64(part.size)), .bytes(part.md5),
                                        .int(part.modified)])
            }
        }
    }

    private static func text(_ value: String?) -> PostgresValue { value.map { .text($0) } ?? .null }

    /// User metadata as every schema version stored it: `name:value` lines, sorted by name.
    private static func metadataText(_ attributes: BlobAttributes) -> String? {
        attributes.userMetadata.isEmpty ? nil : attributes.userMetadata.map { "\($0.name):\($0.value)" }.joined(separator: "\n")
    }
}

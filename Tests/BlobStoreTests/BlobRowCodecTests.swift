import Foundation
import Testing
@testable import BlobStore
@testable import CatalogPostgres
@testable import CatalogSQLite

/// The blob row codecs: one list of the 23 columns per backend, the same in both, and SQL that
/// says what the statements spelled out by hand used to say.
@Suite struct BlobRowCodecTests {
    /// Whitespace collapsed, so that statements compare by their words.
    private func words(_ sql: String) -> String {
        sql.split(whereSeparator: { $0 == " " || $0 == "\n" }).joined(separator: " ")
    }

    @Test func bothBackendsListTheSameColumns() {
        #expect(PostgresBlobRow.columns == SQLiteBlobRow.columns)
        #expect(SQLiteBlobRow.columns.count == 23)
        #expect(SQLiteBlobRow.columns.first == "key")
        #expect(Set(SQLiteBlobRow.columns).count == SQLiteBlobRow.columns.count)
    }

    @Test func postgresStatementsAreTheFormerOnes() {
        #expect(words(PostgresBlobRow.insert) == words("""
            INSERT INTO blobs (key, version, size, sha256, content_type, modified, cache_control, content_disposition, content_encoding, expires,
            user_metadata, md5, parts, checksum, part_sizes, content_language, part_checksums, ttl_expires, expires_at, versioned, lock_mode, lock_until, legal_hold)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)
            ON CONFLICT (key) DO NOTHING
            """))
        #expect(words(PostgresBlobRow.update) == words("""
            UPDATE blobs SET version = $2, size = $3, sha256 = $4, content_type = $5, modified = $6, cache_control = $7,
                content_disposition = $8, content_encoding = $9, expires = $10, user_metadata = $11, md5 = $12, parts = $13,
                checksum = $14, part_sizes = $15, content_language = $16, part_checksums = $17, ttl_expires = $18, expires_at = $19,
                versioned = $20, lock_mode = $21, lock_until = $22, legal_hold = $23
            WHERE key = $1
            """))
    }

    @Test func sqliteUpsertIsTheFormerOne() {
        #expect(words(SQLiteBlobRow.upsert) == words("""
            INSERT INTO blobs (key, version, size, sha256, content_type, modified, cache_control, content_disposition,
                               content_encoding, expires, user_metadata, md5, parts, checksum, part_sizes, content_language,
                               part_checksums, ttl_expires, expires_at, versioned, lock_mode, lock_until, legal_hold)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(key) DO UPDATE SET version = excluded.version, size = excluded.size,
                sha256 = excluded.sha256, content_type = excluded.content_type, modified = excluded.modified,
                cache_control = excluded.cache_control, content_disposition = excluded.content_disposition,
                content_encoding = excluded.content_encoding, expires = excluded.expires, user_metadata = excluded.user_metadata,
                md5 = excluded.md5, parts = excluded.parts, checksum = excluded.checksum, part_sizes = excluded.part_sizes,
                content_language = excluded.content_language, part_checksums = excluded.part_checksums,
                ttl_expires = excluded.ttl_expires, expires_at = excluded.expires_at, versioned = excluded.versioned,
                lock_mode = excluded.lock_mode, lock_until = excluded.lock_until, legal_hold = excluded.legal_hold
            """))
    }

    /// Every field set, committed, replaced, and read back (by key and by listing) as it was.
    @Test func sqliteRowKeepsEveryField() throws {
        let dir = TempDirectory()
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        let index = try SQLiteBlobIndex(path: dir.path + "/index.sqlite")
        let attributes = BlobAttributes(contentType: "text/plain", cacheControl: "no-cache", contentDisposition: "inline",
                                        contentEncoding: "gzip", contentLanguage: "fr", expires: "Thu, 01 Jan 2099 00:00:00 GMT",
                                        userMetadata: [.init(name: "a", value: "1"), .init(name: "b", value: "two")])
        let full = BlobRecord(key: try BlobKey("codec/full"), version: "ab" + String(repeating: "1", count: 30), size: 11,
                              sha256: Array(repeating: 7, count: 32), attributes: attributes, modified: 1_700_000_000,
                              md5: Array(repeating: 9, count: 16), parts: 2, partSizes: [5, 6], partChecksums: ["AAAAAA==", "BBBBBB=="],
                              checksum: "crc32:CCCCCC==-2", ttlExpires: 1_700_000_100, expiresAt: 1_700_000_050)
        let bare = BlobRecord(key: full.key, version: "ab" + String(repeating: "2", count: 30), size: 0, sha256: Array(repeating: 1, count: 32),
                             contentType: "application/octet-stream", modified: 1_700_000_001)
        for record in [full, bare, full] {
            _ = try index.commit(CommitRequest(record, if: .always))
            #expect(try index.record(for: record.key) == record)
        }
        #expect(try index.list(prefix: Array("codec/".utf8), after: nil, limit: 10) == [full])
    }
}

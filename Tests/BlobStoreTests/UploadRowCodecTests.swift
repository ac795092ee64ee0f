import Testing
@testable import BlobStore
@testable import CatalogPostgres
@testable import CatalogSQLite

/// The upload and multipart row codecs: one list of columns per table and backend, the same in
/// both backends, and SQL that says what the statements spelled out by hand used to say.
@Suite struct UploadRowCodecTests {
    /// Whitespace collapsed, so that statements compare by their words.
    private func words(_ sql: String) -> String {
        sql.split(whereSeparator: { $0 == " " || $0 == "\n" }).joined(separator: " ")
    }

    @Test func bothBackendsListTheSameColumns() {
        #expect(PostgresUploadRow.columns == SQLiteUploadRow.columns)
        #expect(PostgresMultipartRow.columns == SQLiteMultipartRow.columns)
        #expect(PostgresMultipartRow.partColumns == SQLiteMultipartRow.partColumns)
        for columns in [SQLiteUploadRow.columns, SQLiteMultipartRow.columns] {
            #expect(columns.first == "id")
            #expect(Set(columns).count == columns.count)
            #expect(columns.contains("content_language"))
            #expect(!columns.contains("owner"), "written at insert only, after the codec's columns")
        }
        #expect(SQLiteUploadRow.columns.count == 15)
        #expect(SQLiteMultipartRow.columns.count == 16)
    }

    @Test func postgresUploadStatements() {
        #expect(words(PostgresUploadRow.insert) == words("""
            INSERT INTO uploads (id, length, "offset", hash_state, metadata, key, content_type, expires, completed_key, cache_control,
                content_disposition, content_encoding, expires_header, user_metadata, content_language, owner)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
            """))
        #expect(words(PostgresUploadRow.importing) == words(PostgresUploadRow.insert + " ON CONFLICT (id) DO NOTHING"))
        #expect(words(PostgresUploadRow.update) == words("""
            UPDATE uploads SET length = $2, "offset" = $3, hash_state = $4, metadata = $5, key = $6, content_type = $7, expires = $8,
                completed_key = $9, cache_control = $10, content_disposition = $11, content_encoding = $12, expires_header = $13,
                user_metadata = $14, content_language = $15
            WHERE id = $1
            """))
    }

    @Test func sqliteUploadStatements() {
        #expect(words(SQLiteUploadRow.insert) == words("""
            INSERT INTO uploads (id, length, offset, hash_state, metadata, key, content_type, expires, completed_key, cache_control,
                content_disposition, content_encoding, expires_header, user_metadata, content_language, owner)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """))
        #expect(words(SQLiteUploadRow.update) == words("""
            UPDATE uploads SET length = ?2, offset = ?3, hash_state = ?4, metadata = ?5, key = ?6,
                content_type = ?7, expires = ?8, completed_key = ?9, cache_control = ?10,
                content_disposition = ?11, content_encoding = ?12, expires_header = ?13, user_metadata = ?14,
                content_language = ?15 WHERE id = ?1
            """))
    }

    @Test func multipartStatements() {
        #expect(words(PostgresMultipartRow.insert) == words("""
            INSERT INTO multipart_uploads (id, key, content_type, cache_control, content_disposition, content_encoding,
                expires_header, user_metadata, created, expires, completed_etag, checksum, content_language, lock_mode, lock_until,
                legal_hold, owner)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
            """))
        #expect(words(SQLiteMultipartRow.insert) == words("""
            INSERT INTO multipart_uploads (id, key, content_type, cache_control, content_disposition, content_encoding,
                expires_header, user_metadata, created, expires, completed_etag, checksum, content_language, lock_mode, lock_until,
                legal_hold, owner)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """))
        #expect(words(PostgresMultipartRow.upsertPart) == words("""
            INSERT INTO multipart_parts (upload, number, size, md5, modified, checksum) VALUES ($1, $2, $3, $4, $5, $6)
            ON CONFLICT (upload, number) DO UPDATE SET size = excluded.size, md5 = excluded.md5, modified = excluded.modified,
                checksum = excluded.checksum
            """))
        #expect(words(PostgresMultipartRow.insertPart) == words("""
            INSERT INTO multipart_parts (upload, number, size, md5, modified, checksum) VALUES ($1, $2, $3, $4, $5, $6)
            ON CONFLICT (upload, number) DO NOTHING
            """))
        #expect(words(SQLiteMultipartRow.upsertPart) == words("""
            INSERT OR REPLACE INTO multipart_parts (upload, number, size, md5, modified, checksum) VALUES (?, ?, ?, ?, ?, ?)
            """))
    }
}

import BlobCatalog
import BlobCore
import PostgresClient

/// The access tables in PostgreSQL (keys, share links, settings and their version), and their
/// one row codec: each column is named here once.
enum PostgresAccessRow {
    static let schema = """
        CREATE TABLE access_keys (
            id text PRIMARY KEY, name text NOT NULL, grants text NOT NULL, token_hash bytea NOT NULL UNIQUE,
            access_key_id text NOT NULL UNIQUE, secret text NOT NULL, created bigint NOT NULL, expires bigint, source text NOT NULL
        );
        CREATE TABLE shares (
            id text PRIMARY KEY, creator text NOT NULL, target bytea NOT NULL, is_prefix bigint NOT NULL, allow text NOT NULL,
            created bigint NOT NULL, expires bigint, max_downloads bigint, downloads bigint NOT NULL
        );
        CREATE INDEX shares_by_creator ON shares (creator);
        CREATE TABLE access_settings (name text PRIMARY KEY, value text NOT NULL);
        CREATE TABLE access_version (id integer PRIMARY KEY CHECK (id = 1), version bigint NOT NULL);
        INSERT INTO access_version (id, version) VALUES (1, 0);
        """

    static let keyColumns = "id, name, grants, token_hash, access_key_id, secret, created, expires, source"
    static let insertKey = "INSERT INTO access_keys (\(keyColumns)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
    static let upsertKey = insertKey + """
         ON CONFLICT (id) DO UPDATE SET name = excluded.name, grants = excluded.grants, token_hash = excluded.token_hash,
        access_key_id = excluded.access_key_id, secret = excluded.secret, expires = excluded.expires
        """
    static let bumpVersion = "UPDATE access_version SET version = version + 1 WHERE id = 1"

    static func values(_ key: KeyRecord) -> [PostgresValue] {
        [.text(key.id), .text(key.name), .text(key.grants.description), .bytes(key.tokenHash), .text(key.accessKeyID),
         .text(key.secretAccessKey), .int(key.created), key.expires.map { .int($0) } ?? .null, .text(key.source.rawValue)]
    }

    static func key(from row: PostgresRow) -> KeyRecord? {
        guard let id = row.text("id"), let name = row.text("name"), let grants = try? Grants(parsing: row.text("grants") ?? ""),
              let tokenHash = row.bytes("token_hash"), let accessKeyID = row.text("access_key_id"), let secret = row.text("secret"),
              let created = row.int("created"), let source = row.text("source").flatMap(KeyRecord.Source.init) else { return nil }
        return KeyRecord(id: id, name: name, grants: grants, tokenHash: tokenHash, accessKeyID: accessKeyID, secretAccessKey: secret,
                         created: created, expires: row.int("expires"), source: source)
    }

    static let shareColumns = "id, creator, target, is_prefix, allow, created, expires, max_downloads, downloads"
    static let insertShare = "INSERT INTO shares (\(shareColumns)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"

    static func values(_ share: ShareRecord) -> [PostgresValue] {
        [.text(share.id), .text(share.creator), .bytes(share.target), .int(share.isPrefix ? 1 : 0), .text(share.allow.rawValue),
         .int(share.created), share.expires.map { .int($0) } ?? .null, share.maxDownloads.map { .int($0) } ?? .null,
         .int(share.downloads)]
    }

    static func share(from row: PostgresRow) -> ShareRecord? {
        guard let id = row.text("id"), let creator = row.text("creator"), let target = row.bytes("target"),
              let allow = row.text("allow").flatMap(ShareRecord.Allow.init), let created = row.int("created") else { return nil }
        return ShareRecord(id: id, creator: creator, target: target, isPrefix: row.int("is_prefix") == 1, allow: allow,
                           created: created, expires: row.int("expires"), maxDownloads: row.int("max_downloads"),
                           downloads: row.int("downloads") ?? 0)
    }
}

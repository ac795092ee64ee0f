import BlobCatalog
import BlobCore
import Foundation
import GRDB

/// The access tables in SQLite (keys, share links, settings and their version), and their one
/// row codec: each column is named here once.
enum SQLiteAccessRow {
    static let schema = """
        CREATE TABLE access_keys (
            id TEXT PRIMARY KEY, name TEXT NOT NULL, grants TEXT NOT NULL, token_hash BLOB NOT NULL UNIQUE,
            access_key_id TEXT NOT NULL UNIQUE, secret TEXT NOT NULL, created INTEGER NOT NULL, expires INTEGER,
            source TEXT NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE shares (
            id TEXT PRIMARY KEY, creator TEXT NOT NULL, target BLOB NOT NULL, is_prefix INTEGER NOT NULL, allow TEXT NOT NULL,
            created INTEGER NOT NULL, expires INTEGER, max_downloads INTEGER, downloads INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX shares_by_creator ON shares (creator);
        CREATE TABLE access_settings (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
        CREATE TABLE access_version (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);
        INSERT INTO access_version (id, version) VALUES (1, 0);
        """

    static let keyColumns = "id, name, grants, token_hash, access_key_id, secret, created, expires, source"
    static let insertKey = "INSERT INTO access_keys (\(keyColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
    static let upsertKey = insertKey + """
         ON CONFLICT (id) DO UPDATE SET name = excluded.name, grants = excluded.grants, token_hash = excluded.token_hash,
        access_key_id = excluded.access_key_id, secret = excluded.secret, expires = excluded.expires
        """
    static let bumpVersion = "UPDATE access_version SET version = version + 1 WHERE id = 1"

    static func arguments(_ key: KeyRecord) -> StatementArguments {
        [key.id, key.name, key.grants.description, Data(key.tokenHash), key.accessKeyID, key.secretAccessKey, key.created,
         key.expires, key.source.rawValue]
    }

    /// A key from its row; nil (reported by the caller) if its grants or source no longer parse.
    static func key(from row: Row) -> KeyRecord? {
        guard let grants = try? Grants(parsing: row["grants"] as String), let source = KeyRecord.Source(rawValue: row["source"]) else {
            return nil
        }
        return KeyRecord(id: row["id"], name: row["name"], grants: grants, tokenHash: [UInt8](row["token_hash"] as Data),
                         accessKeyID: row["access_key_id"], secretAccessKey: row["secret"], created: row["created"],
                         expires: row["expires"], source: source)
    }

    static let shareColumns = "id, creator, target, is_prefix, allow, created, expires, max_downloads, downloads"
    static let insertShare = "INSERT INTO shares (\(shareColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"

    static func arguments(_ share: ShareRecord) -> StatementArguments {
        [share.id, share.creator, Data(share.target), share.isPrefix, share.allow.rawValue, share.created, share.expires,
         share.maxDownloads, share.downloads]
    }

    static func share(from row: Row) -> ShareRecord? {
        guard let allow = ShareRecord.Allow(rawValue: row["allow"]) else { return nil }
        return ShareRecord(id: row["id"], creator: row["creator"], target: [UInt8](row["target"] as Data), isPrefix: row["is_prefix"],
                           allow: allow, created: row["created"], expires: row["expires"], maxDownloads: row["max_downloads"],
                           downloads: row["downloads"])
    }
}

import BlobCatalog
import BlobCore
import Foundation
import PostgresClient

/// The index in PostgreSQL: importing a single-node index's keys, share links, anonymous grants
/// and garbage (`blobd migrate-index`).
extension PostgresBlobIndex {
    /// Adds keys (made at run time or by a bootstrap file: bootstrap keys keep the ids their
    /// names give, so a bootstrap file applied at start updates them in place), in one
    /// transaction, with their token hashes, S3 secrets, grants and expiry. A key whose id,
    /// token or access key id the database has already is left out, and the database's kept.
    /// Bumps the access version when one was new, so that running nodes load them. Returns how
    /// many were new.
    public func importKeys(_ keys: [KeyRecord]) throws(StoreError) -> Int {
        try run { () throws(PostgresError) in
            try pool.transaction { connection throws(PostgresError) in
                var added = 0
                for key in keys {
                    added += try connection.execute(PostgresAccessRow.insertKey + " ON CONFLICT DO NOTHING",
                                                    PostgresAccessRow.values(key)).affected
                }
                if added > 0 { try connection.execute(PostgresAccessRow.bumpVersion) }
                return added
            }
        }
    }

    /// Adds share links with their creators, expiry and download counts, in one transaction;
    /// a link whose id the database has already is kept as it is there (its count included).
    /// Returns how many were new.
    public func importShares(_ shares: [ShareRecord]) throws(StoreError) -> Int {
        try run { () throws(PostgresError) in
            try pool.transaction { connection throws(PostgresError) in
                var added = 0
                for share in shares {
                    added += try connection.execute(PostgresAccessRow.insertShare + " ON CONFLICT (id) DO NOTHING",
                                                    PostgresAccessRow.values(share)).affected
                }
                return added
            }
        }
    }

    /// Adds access settings not tied to a bucket (the anonymous grants) the database does not
    /// have by name, in one transaction, and bumps the access version when one was new. Returns
    /// how many were new.
    public func importAccessSettings(_ settings: [(name: String, value: String)]) throws(StoreError) -> Int {
        try run { () throws(PostgresError) in
            try pool.transaction { connection throws(PostgresError) in
                var added = 0
                for (name, value) in settings {
                    added += try connection.execute("INSERT INTO access_settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
                                                    [.text(name), .text(value)]).affected
                }
                if added > 0 { try connection.execute(PostgresAccessRow.bumpVersion) }
                return added
            }
        }
    }

    /// Adds versions whose files wait to be reclaimed, as replaced now: a node reclaims them
    /// after the grace period. A version the database has as garbage already keeps its time.
    /// Returns how many were new.
    public func importGarbage(_ versions: [String]) throws(StoreError) -> Int {
        guard !versions.isEmpty else { return 0 }
        return try run { () throws(PostgresError) in
            try pool.withConnection { connection throws(PostgresError) in
                try connection.execute("INSERT INTO garbage (version, since) SELECT unnest($1::text[]), $2 ON CONFLICT (version) DO NOTHING",
                                       [.textArray(versions), .int(clock.seconds)]).affected
            }
        }
    }
}

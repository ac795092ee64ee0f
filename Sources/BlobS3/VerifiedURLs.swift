import MicroHTTPD
import Synchronization

/// Presigned URLs whose signature checked out, so that the same URL requested again is not
/// verified from scratch: a media player's range requests, a download tool's parallel ranges
/// and a link shared by many all repeat one URL.
///
/// An entry is found by the exact method, raw path and raw query, which hold the signature and
/// everything a presigned URL signs but its headers; the signed headers' canonical form and the
/// payload hash are compared as well. A hit thus stands for a request whose canonical request is
/// byte for byte one that was verified, so its signature is the same HMAC of the same string.
/// What depends on the moment is checked again on every hit by the caller: the key must still
/// have the secret it was verified with (SIGHUP may have changed it), the URL must not have
/// expired, and the key must have the scope.
final class VerifiedURLs: Sendable {
    /// A reference: a hit hands it out with one retain, inside the lock as briefly as can be.
    final class Entry: Sendable {
        /// The query, decoded.
        let query: [(name: String, value: [UInt8])]
        /// The query without the signature's own parameters: what the operation reads.
        let parameters: [(name: String, value: [UInt8])]
        let signed: SigV4.Signed
        let secret: String
        let signedAt: Int64
        let canonicalHeaders: [UInt8]

        init(query: [(name: String, value: [UInt8])], signed: SigV4.Signed, secret: String, signedAt: Int64, canonicalHeaders: [UInt8]) {
            self.query = query
            parameters = SigV4.operationParameters(query)
            self.signed = signed
            self.secret = secret
            self.signedAt = signedAt
            self.canonicalHeaders = canonicalHeaders
        }
    }

    /// The raw request line's parts, hashed once, before any lock is taken.
    struct Key: Hashable, Sendable {
        let bytes: [UInt8]
        let hash: Int

        init?(_ head: HTTPRequestHead) {
            guard let query = head.query else { return nil }
            var bytes: [UInt8] = []
            bytes.reserveCapacity(head.method.utf8.count + head.path.count + query.count + 2)
            bytes += head.method.utf8
            bytes.append(0)
            bytes += head.path
            bytes.append(0)
            bytes += query
            self.bytes = bytes
            var hasher = Hasher()
            bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
            hash = hasher.finalize()
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(hash)
        }

        static func == (a: Key, b: Key) -> Bool {
            a.hash == b.hash && a.bytes == b.bytes
        }
    }

    /// Entries kept, and bytes they may hold in all: when a shard reaches its share of either, it
    /// starts again empty (its URLs are then verified once more). The bytes bound what long URLs
    /// can pin, whatever their number.
    let capacity: Int
    let byteCapacity: Int
    /// Shards by key hash, so the worker threads seldom wait for each other's lookups (one lock
    /// for all made a thread sleep on every few hundred GETs, a context switch each time).
    private static let shardCount = 16
    private let shards = (0..<VerifiedURLs.shardCount).map { _ in Shard() }

    init(capacity: Int = 4096, byteCapacity: Int = 16 << 20) {
        self.capacity = capacity
        self.byteCapacity = byteCapacity
    }

    private final class Shard: Sendable {
        let entries = Mutex<(table: [Key: Entry], bytes: Int)>(([:], 0))
    }

    /// Bytes held by the entries of every shard (their request lines, queries and headers).
    var bytes: Int {
        shards.reduce(0) { total, shard in total + shard.entries.withLock { $0.bytes } }
    }

    /// Entries held in all.
    var count: Int {
        shards.reduce(0) { total, shard in total + shard.entries.withLock { $0.table.count } }
    }

    /// What an entry holds, roughly: the key, the query twice (decoded, and the operation's
    /// share of it), the canonical headers, and a fixed overhead.
    static func cost(_ key: Key, _ entry: Entry) -> Int {
        let query = entry.query.reduce(0) { $0 + $1.name.utf8.count + $1.value.count + 32 }
        return key.bytes.count + 2 * query + entry.canonicalHeaders.count + entry.signed.signedHeaders.count * 24 + 256
    }

    private func shard(_ key: Key) -> Shard {
        shards[Int(UInt(bitPattern: key.hash) % UInt(Self.shardCount))]
    }

    /// The entry for `key` if `head` also carries the same signed headers and payload hash.
    func entry(_ key: Key, head: HTTPRequestHead) -> Entry? {
        guard let entry = shard(key).entries.withLock({ $0.table[key] }) else { return nil }
        var headers: [UInt8] = []
        SigV4.appendCanonicalHeaders(head.headers, signed: entry.signed, to: &headers)
        guard headers == entry.canonicalHeaders,
              (head["x-amz-content-sha256"] ?? "UNSIGNED-PAYLOAD") == entry.signed.payloadHash else { return nil }
        return entry
    }

    /// Remembers a verified presigned request.
    func insert(_ key: Key, head: HTTPRequestHead, query: [(name: String, value: [UInt8])], signed: SigV4.Signed,
                secret: String, signedAt: Int64) {
        var headers: [UInt8] = []
        SigV4.appendCanonicalHeaders(head.headers, signed: signed, to: &headers)
        let entry = Entry(query: query, signed: signed, secret: secret, signedAt: signedAt, canonicalHeaders: headers)
        let cost = Self.cost(key, entry)
        let (entryLimit, byteLimit) = (capacity / Self.shardCount, byteCapacity / Self.shardCount)
        guard cost <= byteLimit else { return }
        shard(key).entries.withLock { entries in
            if let old = entries.table[key] { entries.bytes -= Self.cost(key, old) }
            if entries.table.count >= entryLimit || entries.bytes + cost > byteLimit {
                entries.table.removeAll(keepingCapacity: true)
                entries.bytes = 0
            }
            entries.table[key] = entry
            entries.bytes += cost
        }
    }
}

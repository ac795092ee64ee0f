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

    /// Entries kept; when a shard is full, it starts again empty (its URLs are then verified once more).
    static let capacity = 4096
    /// Shards by key hash, so the worker threads seldom wait for each other's lookups (one lock
    /// for all made a thread sleep on every few hundred GETs, a context switch each time).
    private static let shardCount = 16
    private let shards = (0..<VerifiedURLs.shardCount).map { _ in Shard() }

    private final class Shard: Sendable {
        let entries = Mutex<[Key: Entry]>([:])
    }

    private func shard(_ key: Key) -> Shard {
        shards[Int(UInt(bitPattern: key.hash) % UInt(Self.shardCount))]
    }

    /// The entry for `key` if `head` also carries the same signed headers and payload hash.
    func entry(_ key: Key, head: HTTPRequestHead) -> Entry? {
        guard let entry = shard(key).entries.withLock({ $0[key] }) else { return nil }
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
        shard(key).entries.withLock { entries in
            if entries.count >= Self.capacity / Self.shardCount { entries.removeAll(keepingCapacity: true) }
            entries[key] = entry
        }
    }
}

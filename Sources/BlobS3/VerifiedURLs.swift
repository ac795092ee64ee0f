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
    struct Entry: Sendable {
        /// The query, decoded.
        let query: [(name: String, value: [UInt8])]
        let signed: SigV4.Signed
        let secret: String
        let signedAt: Int64
        let canonicalHeaders: [UInt8]
    }

    /// The raw request line's parts, hashed in one pass over their bytes.
    struct Key: Hashable, Sendable {
        let bytes: [UInt8]

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
        }

        func hash(into hasher: inout Hasher) {
            bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }

    /// Entries kept; when full, the table starts again empty (a URL is then verified once more).
    static let capacity = 4096
    private let entries = Mutex<[Key: Entry]>([:])

    /// The entry for `key` if `head` also carries the same signed headers and payload hash.
    func entry(_ key: Key, head: HTTPRequestHead) -> Entry? {
        guard let entry = entries.withLock({ $0[key] }) else { return nil }
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
        entries.withLock { entries in
            if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = entry
        }
    }
}

import BlobStore
import BucketSettings

/// The expiry header fields answers carry, from a blob's own deadline and its bucket's rules.
extension LifecycleSettings {
    /// `x-amz-expiration`: `expiry-date="Fri, 23 Dec 2026 00:00:00 GMT", rule-id="ID"`.
    public static func expirationHeader(deadline: Int64, ruleID: String) -> (name: String, value: String) {
        let id = ruleID.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        return ("x-amz-expiration", "expiry-date=\"\(HTTPDate.format(deadline))\", rule-id=\"\(id)\"")
    }

    /// The expiry header fields of a blob: `Blob-Expires-At` for its own deadline, and
    /// `x-amz-expiration` for its bucket's rule.
    public static func headers(_ record: BlobRecord, store: BlobStore) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = []
        if let ttl = record.ttlExpires { headers.append(("Blob-Expires-At", HTTPDate.format(ttl))) }
        if let rule = store.expiration(of: record) { headers.append(expirationHeader(deadline: rule.deadline, ruleID: rule.ruleID)) }
        return headers
    }
}

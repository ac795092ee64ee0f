import BlobStore
import Foundation
import HTTPCore
import MicroHTTPD
import Access

/// `GET|PUT /v1/admin/buckets/BUCKET/public` `{"prefixes": ["", "pub/"]}`: the prefixes of a
/// bucket anonymous callers may read and list (`""` is the whole bucket). Kept as the bucket's
/// policy in the common public shape (`BucketPolicy`), so S3's GetBucketPolicy answers it and
/// every node reloads it like any policy. A PUT replaces the bucket's whole policy; an empty list
/// removes it.
extension BlobService {
    /// Most prefixes one bucket may make public.
    static let maxPublicPrefixes = 100

    /// A bucket's name from the path: 1 to 63 bytes of lowercase letters, digits, `.`, `-` and
    /// `_` (S3's rules, with the underscore older buckets may have); 404 for anything else.
    static func bucketName(_ raw: ArraySlice<UInt8>) throws(StoreError) -> String {
        guard (1...63).contains(raw.count),
              raw.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2E || $0 == 0x2D || $0 == 0x5F }) else {
            throw .bucketNotFound
        }
        return String(decoding: raw, as: UTF8.self)
    }

    /// GET: the read prefixes of the bucket's policy (an empty list without one).
    func publicPrefixes(bucket: String) throws -> HTTPResponse {
        let catalog = store.catalog
        guard try catalog.buckets.bucket(bucket) != nil else { throw StoreError.bucketNotFound }
        let policy = try store.settings.stored(bucket, .policy)
        var prefixes: [String] = []
        if let policy, let parsed = try? BucketPolicy(parsing: Array(policy.utf8), bucket: bucket) {
            for grant in parsed.grants where grant.action == .read {
                switch grant.pattern {
                case .bucket: prefixes.append("")
                case .prefix(let bytes): prefixes.append(String(decoding: bytes.dropFirst(bucket.utf8.count + 1), as: UTF8.self))
                case .everything, .key: break  // an exact key is no prefix; a policy never names everything
                }
            }
        }
        return Self.jsonResponse(status: 200, Self.publicJSON(Array(Set(prefixes)).sorted()))
    }

    /// PUT `{"prefixes": [...]}`: 200 with the prefixes stored.
    func setPublicPrefixes(_ head: HTTPRequestHead, bucket: String) throws -> HTTPRequestAction {
        try Self.requireJSON(head)
        return .receive(BufferedBody(limit: Self.maxAdminBody, committers: committers) { [self] body in
            do {
                let prefixes = try Self.parsePrefixes(try Self.jsonObject(body), bucket: bucket)
                let policy = prefixes.isEmpty ? nil : Self.policy(bucket: bucket, prefixes: prefixes)
                if let policy {
                    // Made here, checked by the same parser S3's PutBucketPolicy uses.
                    _ = try BucketPolicy(parsing: Array(policy.utf8), bucket: bucket)
                }
                try store.settings.set(bucket, .policy, to: policy)
                return Self.jsonResponse(status: 200, Self.publicJSON(prefixes))
            } catch let error as BucketPolicy.ParseError {
                return failure(HTTPError.badRequest("\(error)"))
            } catch {
                return failure(error)
            }
        })
    }

    static func publicJSON(_ prefixes: [String]) -> JSON {
        .object([("prefixes", .array(prefixes.map { .string($0) }))])
    }

    /// The body's `prefixes`: strings, each "" or the start of a valid key, sorted and each once.
    static func parsePrefixes(_ object: [String: Any], bucket: String) throws(HTTPError) -> [String] {
        if let unknown = object.keys.sorted().first(where: { $0 != "prefixes" }) {
            throw .badRequest("Unknown member \"\(unknown)\": the body is {\"prefixes\": [...]}.")
        }
        guard let list = object["prefixes"] as? [Any], let texts = list as? [String] else {
            throw .badRequest("\"prefixes\" must be a list of strings.")
        }
        guard texts.count <= maxPublicPrefixes else { throw .badRequest("At most \(maxPublicPrefixes) prefixes.") }
        for text in texts where text.contains("*") || (try? BlobKey(validating: Array((bucket + "/" + text + "x").utf8))) == nil {
            throw .badRequest("\"\(text)\" is not the start of a valid key (no '*', no empty or '.' segments).")
        }
        return Array(Set(texts)).sorted()
    }

    /// The bucket policy that lets every caller read and list each prefix.
    static func policy(bucket: String, prefixes: [String]) -> String {
        let resources = prefixes.map { "arn:aws:s3:::\(bucket)/\($0)*" }
        var list: [String: Any] = ["Sid": "blobd-public-list", "Effect": "Allow", "Principal": "*", "Action": "s3:ListBucket",
                                   "Resource": "arn:aws:s3:::\(bucket)"]
        if !prefixes.contains("") {
            list["Condition"] = ["StringLike": ["s3:prefix": prefixes.map { $0 + "*" }]]
        }
        let policy: [String: Any] = ["Version": "2012-10-17", "Statement": [
            ["Sid": "blobd-public-read", "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": resources],
            list,
        ]]
        let data = (try? JSONSerialization.data(withJSONObject: policy, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}

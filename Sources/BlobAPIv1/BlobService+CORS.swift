import BlobStore
import HTTPCore
import MicroHTTPD

/// CORS on the /v1 listener (`CORSPolicy` decides): preflights answered before
/// authentication, the headers every answer carries, and `/v1/admin/buckets/B/cors`.
extension BlobService {
    /// A preflight: 200 with what the matching rule allows, else 403.
    func preflight(_ head: HTTPRequestHead) -> HTTPResponse {
        guard let headers = cors.preflight(head, bucket: corsBucket(head, lookingUpShare: true)) else {
            return failure(HTTPError.corsNotAllowed)
        }
        return HTTPResponse(status: 200, headers: headers + [Self.noStore])
    }

    /// Every answer passes here just before it is sent: the CORS headers, written once for
    /// every route. Nothing is done while no rule exists anywhere.
    public func finishing(_ response: inout HTTPResponse, for head: HTTPRequestHead) {
        guard cors.isActive, !CORSPolicy.isPreflight(head) else { return }
        // Without any bucket's rules the bucket does not matter: its path is not even decoded.
        cors.decorate(&response, head: head, bucket: cors.hasBucketRules ? corsBucket(head, lookingUpShare: false) : nil)
    }

    /// The bucket whose rules answer a request: a blob's (`/v1/blobs/B/...`), a listing's (its
    /// prefix's first segment, when the prefix has a slash), a share link's (its key's, known
    /// to the handler; a preflight looks the link up). Nil for the rest: tus URLs, admin and
    /// operational routes follow the global flags.
    func corsBucket(_ head: HTTPRequestHead, lookingUpShare: Bool) -> String? {
        let path = head.path
        let blobs = "/v1/blobs/".utf8, shares = "/s/".utf8
        if path.starts(with: blobs) {
            guard let decoded = PercentEncoding.decode(path.dropFirst(blobs.count)) else { return nil }
            return Self.firstSegment(decoded[...])
        }
        if path.elementsEqual("/v1/blobs".utf8) {
            let prefix = Self.listedPrefix(head)
            return prefix.contains(UInt8(ascii: "/")) ? Self.firstSegment(prefix[...]) : nil
        }
        if path.starts(with: shares) {
            if let known = head.annotation.bucket { return known }
            guard lookingUpShare, cors.hasBucketRules else { return nil }
            let id = path.dropFirst(shares.count).prefix { $0 != UInt8(ascii: "/") }
            guard Self.isShareID(String(decoding: id, as: UTF8.self)),
                  let share = try? shareCatalog().share(String(decoding: id, as: UTF8.self)) else { return nil }
            return Self.firstSegment(share.target[...])
        }
        return nil
    }

    /// A key's first segment, its bucket.
    static func firstSegment(_ bytes: ArraySlice<UInt8>) -> String? {
        let segment = bytes.prefix { $0 != UInt8(ascii: "/") }
        return segment.isEmpty ? nil : String(decoding: segment, as: UTF8.self)
    }

    // MARK: - /v1/admin/buckets/B/cors

    /// `bucket`, checked to exist.
    private func requireBucket(_ bucket: String) throws {
        guard try store.buckets.bucket(bucket) != nil else { throw StoreError.bucketNotFound }
    }

    /// GET: the stored rules; 404 `setting-not-found` without any.
    func getCORS(bucket: String) throws -> HTTPResponse {
        try requireBucket(bucket)
        guard let value = try store.settings.stored(bucket, .cors) else {
            throw HTTPError.settingNotFound("The bucket \(bucket) has no CORS rules.")
        }
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/json"), Self.noStore], body: .bytes(Array(value.utf8)))
    }

    /// PUT `{"rules": [...]}`: checked, stored as canonical JSON, in force on this node at once.
    func putCORS(_ head: HTTPRequestHead, bucket: String) throws -> HTTPRequestAction {
        try Self.requireJSON(head)
        try requireBucket(bucket)
        return .receive(BufferedBody(limit: CORSConfiguration.maximumSize, committers: committers) { [self] body in
            do {
                guard let body else { throw StoreError.tooLarge(limit: UInt64(CORSConfiguration.maximumSize)) }
                let configuration: CORSConfiguration
                do throws(CORSConfiguration.Invalid) {
                    configuration = try CORSConfiguration(jsonText: body)
                } catch {
                    throw HTTPError.badRequest(error.description)
                }
                let text = configuration.json.serialized()
                try store.settings.set(bucket, .cors, to: text)
                return HTTPResponse(status: 200, headers: [("Content-Type", "application/json"), Self.noStore], body: .bytes(Array(text.utf8)))
            } catch {
                return failure(error)
            }
        })
    }

    /// DELETE: 204, with or without rules.
    func deleteCORS(bucket: String) throws -> HTTPResponse {
        try requireBucket(bucket)
        try store.settings.set(bucket, .cors, to: nil)
        return HTTPResponse(status: 204, headers: [Self.noStore])
    }
}

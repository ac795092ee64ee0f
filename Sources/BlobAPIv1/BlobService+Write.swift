import BlobStore
import HTTPCore
import Foundation
import MicroHTTPD
import TusHooks

extension BlobService {
    /// PUT (at `key`) or POST (content-addressed, `key` nil): everything that can be decided from
    /// the head is decided here, before any body byte is read; then the body streams to the store.
    /// `onlyCreate`: the caller's grant is `create`, so the commit refuses to replace a blob.
    /// `recheck` runs before the commit: it throws when the caller (or link) lost its right meanwhile.
    func receiveUpload(_ head: HTTPRequestHead, key: BlobKey?, onlyCreate: Bool,
                       recheck: @escaping @Sendable () throws -> Void) throws -> HTTPRequestAction {
        guard let hooks, hooks.runs(.preCreate) else {
            return try receiveUploadNow(head, key: key, onlyCreate: onlyCreate, recheck: recheck)
        }
        let upload = HookUpload(size: head["Content-Length"].flatMap { UInt64($0) },
                                metadata: head.hookMetadata(key: key?.rawValue, prefix: Self.metadataPrefix))
        return hooks.preCreate(head, upload: upload, failure: { [self] in failure($0) }) { [self] changes in
            let changed = changes.metadata.map { head.applyingHookMetadata($0, prefix: Self.metadataPrefix) } ?? head
            return try receiveUploadNow(changed, key: key, onlyCreate: onlyCreate, recheck: recheck)
        }
    }

    /// A PUT or POST once the pre-create hook (if any) let it go on.
    private func receiveUploadNow(_ head: HTTPRequestHead, key: BlobKey?, onlyCreate: Bool,
                                  recheck: @escaping @Sendable () throws -> Void) throws -> HTTPRequestAction {
        if let key { try ensureBucket(of: key) }
        let expectedSHA256 = try announcedSHA256(head)
        let timeToLive = try Self.timeToLive(head)
        let preconditions = Preconditions(head)
        var condition = preconditions.writeCondition()
        condition.onlyCreate = onlyCreate
        // Decided early when it can be, so that no body is read in vain; the commit decides again.
        if let key, !preconditions.isEmpty || onlyCreate, let failure = condition.failure(for: try store.record(for: key)) {
            throw failure
        }
        let attributes = try UploadAttributes.parse(contentType: head["Content-Type"], cacheControl: head["Cache-Control"],
                                             contentDisposition: head["Content-Disposition"],
                                             contentEncoding: head["Content-Encoding"], contentLanguage: head["Content-Language"],
                                             expires: head["Expires"], userMetadata: try Self.blobMetadata(head),
                                             typeGuessedFrom: key?.rawValue)
        let expectedMD5 = try UploadAttributes.contentMD5(head)
        let contentLength = head["Content-Length"].flatMap { UInt64($0) }
        // A body of 1 MiB or more is hashed on a second thread as it is written; MD5 only when a
        // Content-MD5 asks for it: it costs more CPU than SHA-256.
        let hasher = BodyHasher(md5: expectedMD5 != nil, expectedSize: contentLength)
        let stream = try store.beginWrite(expectedSize: contentLength, expectedSHA256: expectedSHA256, hasher: hasher)
        // A content-addressed POST names no bucket, so no subscription can want it.
        let events = key.flatMap { self.events.draft("ObjectCreated:Put", key: $0, head: head, dialect: "v1") }
        return .receive(StreamingBody(
            committers: committers, metrics: metrics, write: { try stream.write($0) }, abandon: { stream.abandon() },
            end: { [self] failure, respond in
                commitUpload(stream, failure: failure, head: head, key: key, attributes: attributes, expectedMD5: expectedMD5,
                             timeToLive: timeToLive, condition: condition, events: events, recheck: recheck, then: respond)
            }))
    }

    /// The end of a PUT or POST body, on the commit pool: the fsync runs here, the index commit
    /// in a group commit, and the answer comes from the thread that committed its batch.
    private func commitUpload(_ stream: BlobWriteStream, failure: (any Error)?, head: HTTPRequestHead, key: BlobKey?,
                              attributes: BlobAttributes, expectedMD5: [UInt8]?, timeToLive: Int64?, condition: WriteCondition, events: EventDraft?,
                              recheck: @escaping @Sendable () throws -> Void, then respond: @escaping (HTTPResponse) -> Void) {
        let md5: [UInt8]?
        do {
            if let failure { throw failure }
            md5 = try Self.checkedMD5(stream, expected: expectedMD5)
        } catch {
            stream.abandon()
            return respond(self.failure(error))
        }
        let commit: (HookChanges) -> Void = { [self] changes in
            do {
                try recheck()
            } catch {
                stream.abandon()
                return respond(self.failure(error))
            }
            stream.commit(as: key, attributes: attributes, md5: md5, timeToLive: timeToLive, if: condition, events: events) { [self] result in
                switch result {
                case .success(let stored):
                    let record = stored.record
                    respond(Self.jsonResponse(
                        status: stored.created ? 201 : 200, Self.json(record),
                        headers: [("ETag", EntityTag(version: record.version).headerValue),
                                  ("Location", publicLocation(of: record.key))]
                            + LifecycleSettings.headers(record, store: store)
                            + Self.versionHeaders(record, store.versioning(of: record.key)) + changes.headers))
                case .failure(let error):
                    respond(self.failure(error))
                }
            }
        }
        guard let hooks, hooks.runs(.preFinish) else { return commit(HookChanges()) }
        let size = stream.size
        let upload = HookUpload(size: size, offset: size, metadata: head.hookMetadata(key: key?.rawValue, prefix: Self.metadataPrefix),
                                storage: key.map { ["Type": "blobd", "Key": $0.rawValue] })
        hooks.preFinish(head, upload: upload) { [self] outcome in
            switch outcome {
            case .proceed(let changes): commit(changes)
            case .reject(let response):
                stream.abandon()
                respond(response)
            case .fail(let error):
                stream.abandon()
                respond(self.failure(error))
            }
        }
    }

    /// `?ttl=DURATION` of a PUT or POST: seconds, or with `s`, `m`, `h` or `d`, from 1 s to 100
    /// years; once at most. Nil without one.
    static func timeToLive(_ head: HTTPRequestHead) throws(HTTPError) -> Int64? {
        guard let raw = head.query, !raw.isEmpty else { return nil }
        guard let query = PercentEncoding.decodeQuery(raw) else {
            // Other parameters are ignored, as before; a ttl must be read.
            if String(decoding: raw, as: UTF8.self).contains("ttl") { throw .badRequest("The query string is not valid percent-encoding.") }
            return nil
        }
        let values = query.filter { $0.name == "ttl" }
        guard let value = values.first else { return nil }
        guard values.count == 1 else { throw .badRequest("Give ttl once.") }
        guard let seconds = ExpiryDuration.parse(String(decoding: value.value, as: UTF8.self)) else {
            throw .badRequest("ttl must be a duration: whole seconds, or a number with s, m, h or d (like 30m or 7d), "
                              + "from 1 second to \(ExpiryDuration.maximum / 86_400) days.")
        }
        return seconds
    }

    /// The body's MD5 when a Content-MD5 announced one, which it must equal (S3's BadDigest).
    private static func checkedMD5(_ stream: BlobWriteStream, expected: [UInt8]?) throws -> [UInt8]? {
        guard let expected else { return nil }
        let md5 = try stream.digests().md5 ?? []
        guard md5 == expected else {
            throw HTTPError.digestMismatch("The body's MD5 is \(DigestField.base64(md5)), not the Content-MD5 "
                                           + "\(DigestField.base64(expected)); nothing was stored.")
        }
        return md5
    }

    /// The prefix of the header fields that carry user metadata on /v1; S3 names the same
    /// metadata `x-amz-meta-*`.
    static let metadataPrefix = "blob-meta-"
    /// The `Blob-Meta-*` fields of a PUT or POST (names without the prefix), at most 2 KB in all.
    static func blobMetadata(_ head: HTTPRequestHead) throws(HTTPError) -> [(name: String, value: String)] {
        let fields = head.headers.filter { $0.name.lowercased().hasPrefix(metadataPrefix) }
            .map { (name: String($0.name.dropFirst(metadataPrefix.count)), value: $0.value) }
        guard UploadAttributes.userMetadataBytes(fields) <= UploadAttributes.maxUserMetadataBytes else {
            throw .badRequest("The Blob-Meta-* fields hold more than \(UploadAttributes.maxUserMetadataBytes) bytes of names and values (S3's limit).")
        }
        return fields
    }

    /// DELETE: 204, or 404 when absent (preconditions are not evaluated then, RFC 9110 §13.2.1).
    func delete(_ head: HTTPRequestHead, key: BlobKey) throws -> HTTPResponse {
        let condition = Preconditions(head).writeCondition()
        if let versioned = try deleteVersioned(head, key: key, if: condition) { return versioned }
        try store.delete(key, if: condition,
                         events: events.draft("ObjectRemoved:Delete", key: key, head: head, dialect: "v1"))
        return HTTPResponse(status: 204, headers: [Self.noStore])
    }

    /// The sha-256 of `Content-Digest` (or `Repr-Digest`, the same for an uncoded full PUT).
    private func announcedSHA256(_ head: HTTPRequestHead) throws -> [UInt8]? {
        var found: [UInt8]?
        for name in ["Content-Digest", "Repr-Digest"] {
            let values = head.values(of: name)
            guard !values.isEmpty else { continue }
            guard let digest = try DigestField.sha256(in: values.joined(separator: ", ")) else { continue }
            if let found, found != digest {
                throw HTTPError.badRequest("Content-Digest and Repr-Digest announce different sha-256 digests.")
            }
            found = digest
        }
        return found
    }
}

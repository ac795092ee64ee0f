import BlobStore
import HTTPCore
import MicroHTTPD
import Access
import TusHooks

/// tus 1.0.0 resumable uploads on /v1/uploads: core, creation, creation-with-upload,
/// creation-defer-length, termination, checksum and expiration.
extension BlobService {
    static let tusVersion = "1.0.0"
    static let tusResumable: (name: String, value: String) = ("Tus-Resumable", tusVersion)

    /// Every tus request but OPTIONS names the version it speaks.
    private func requireTusVersion(_ head: HTTPRequestHead) throws(HTTPError) {
        guard head["Tus-Resumable"]?.trimmingOWS() == Substring(Self.tusVersion) else { throw .tusVersionUnsupported }
    }

    /// HEAD /v1/uploads/{id}: the offset. An append still in progress (its client may be gone
    /// unnoticed) is stopped first.
    func uploadOffset(_ head: HTTPRequestHead, id: String) throws -> HTTPRequestAction {
        try requireTusVersion(head)
        return .respond(HTTPResponse(status: 200, headers: uploadHeaders(try store.currentUpload(id)) + [Self.noStore]))
    }

    /// DELETE /v1/uploads/{id}: termination.
    func terminateUpload(_ head: HTTPRequestHead, id: String) throws -> HTTPRequestAction {
        try requireTusVersion(head)
        try store.terminateUpload(id)
        return .respond(HTTPResponse(status: 204, headers: [Self.tusResumable]))
    }

    func tusOptions() -> HTTPResponse {
        var headers: [(name: String, value: String)] = [
            Self.tusResumable,
            ("Tus-Version", Self.tusVersion),
            ("Tus-Extension", "creation,creation-with-upload,creation-defer-length,termination,checksum,expiration"),
            ("Tus-Checksum-Algorithm", "sha1,sha256"),
        ]
        if let limit = store.options.maxBlobSize { headers.append(("Tus-Max-Size", String(limit))) }
        return HTTPResponse(status: 204, headers: headers)
    }

    /// Where a tus creation stores its blob and how its upload is answered: the /v1 one (the
    /// metadata's `key`, the caller's grant) or a share link's (`ShareLinks`).
    struct UploadTarget: Sendable {
        /// The blob's key from the metadata (nil: content-addressed).
        let key: @Sendable ([String: [UInt8]]) throws -> BlobKey?
        /// Whether the commit may only create the blob.
        let onlyCreate: @Sendable (UploadRecord) -> Bool
        /// Whom the upload counts against (`--max-open-uploads`).
        let owner: String
        /// Runs as each body ends, before its bytes are saved: throws when the caller (or link)
        /// lost the right to write the upload's key meanwhile.
        let recheck: @Sendable (BlobKey?) throws -> Void
        /// The upload's URL.
        let location: @Sendable (String) -> String
    }

    /// POST /v1/uploads: creation, with the first bytes when a body is sent.
    func createUpload(_ head: HTTPRequestHead, _ caller: Principal) throws -> HTTPRequestAction {
        // The key is the metadata's once the pre-create hook had its say: the caller's grant is
        // checked on that one, whichever key the request named.
        let target = UploadTarget(key: { metadata in try Self.authorizedKey(metadata, caller) },
                                  onlyCreate: { Self.onlyCreate(caller, $0) }, owner: access.uploadOwner(head),
                                  recheck: { [access] in try access.recheck(caller, Self.writeRequirement($0)) },
                                  location: { [self] in publicLocation(ofUpload: $0) })
        return try createUpload(head, target)
    }

    /// A tus creation into `target`, with the first bytes when a body is sent, once the
    /// pre-create hook (if any) lets it go on.
    func createUpload(_ head: HTTPRequestHead, _ target: UploadTarget) throws -> HTTPRequestAction {
        guard let hooks, hooks.runs(.preCreate) else { return try createUploadNow(head, target) }
        try requireTusVersion(head)
        let metadata = try TusHeaders.metadata(head["Upload-Metadata"] ?? "")
        let upload = HookUpload(size: try head["Upload-Length"].map { try TusHeaders.number($0, "Upload-Length") },
                                metadata: metadata.mapValues { String(decoding: $0, as: UTF8.self) })
        return hooks.preCreate(head, upload: upload, failure: { [self] in tusFailure($0) }) { [self] changes in
            guard let changed = changes.metadata else { return try createUploadNow(head, target) }
            return try createUploadNow(TusHeaders.replacingMetadata(of: head, with: changed), target)
        }
    }

    private func createUploadNow(_ head: HTTPRequestHead, _ target: UploadTarget) throws -> HTTPRequestAction {
        try requireTusVersion(head)
        let length: UInt64?
        switch (head["Upload-Length"], head["Upload-Defer-Length"]) {
        case (let value?, nil): length = try TusHeaders.number(value, "Upload-Length")
        case (nil, let value?) where value.trimmingOWS() == "1": length = nil
        default: throw HTTPError.badRequest("Send Upload-Length, or Upload-Defer-Length: 1 (not both).")
        }
        let rawMetadata = head["Upload-Metadata"] ?? ""
        let metadata = try TusHeaders.metadata(rawMetadata)
        let key = try target.key(metadata)
        if let key { try ensureBucket(of: key) }
        func text(_ name: String) -> String? { metadata[name].map { String(decoding: $0, as: UTF8.self) } }
        // The blob's time to live, counted from when it is stored (the upload's last byte).
        if let ttl = text("ttl"), ExpiryDuration.parse(ttl) == nil {
            throw HTTPError.badRequest("The Upload-Metadata ttl must be a duration: whole seconds, or a number with s, m, h or d "
                                       + "(like 30m or 7d), from 1 second to \(ExpiryDuration.maximum / 86_400) days.")
        }
        let attributes = try UploadAttributes.parse(contentType: text("content-type") ?? text("filetype"),
                                             cacheControl: text("cache-control"), contentDisposition: text("content-disposition"),
                                             contentLanguage: text("content-language"),
                                             typeGuessedFrom: [text("key"), text("filename")].compactMap { $0 }
                                                 .first { MediaTypes.guess($0) != nil })
        if head.hasBody { try requireOffsetStream(head) }
        let checksum = try head["Upload-Checksum"].map(TusHeaders.checksum)
        let upload = try store.createUpload(
            length: length, metadata: rawMetadata, key: key, attributes: attributes, lifetime: uploadLifetime,
            owner: target.owner)
        // An empty upload is complete at once; otherwise only a body needs an append.
        guard head.hasBody || length == 0 else {
            return .respond(HTTPResponse(status: 201, headers: uploadHeaders(upload) + [("Location", target.location(upload.id))]))
        }
        let append = try store.beginAppend(to: upload.id, at: 0, lifetime: uploadLifetime,
                                           bodySize: head["Content-Length"].flatMap { UInt64($0) }, checksum: checksum,
                                           onlyCreate: target.onlyCreate(upload), events: tusEvents(head, key: key))
        return receive(head, into: append, location: target.location(upload.id), recheck: { try target.recheck(key) })
    }

    /// PATCH /v1/uploads/{id}: append at Upload-Offset.
    func patchUpload(_ head: HTTPRequestHead, id: String, _ caller: Principal) throws -> HTTPRequestAction {
        let upload = try store.upload(id)
        return try patchUpload(head, id: id, onlyCreate: Self.onlyCreate(caller, upload),
                               recheck: { [access] in try access.recheck(caller, Self.writeRequirement(upload.key)) })
    }

    /// A PATCH of the upload `id`; `onlyCreate` when the caller may only create its blob;
    /// `recheck` before the bytes are saved (see `UploadTarget.recheck`).
    func patchUpload(_ head: HTTPRequestHead, id: String, onlyCreate: Bool,
                     recheck: @escaping @Sendable () throws -> Void) throws -> HTTPRequestAction {
        try requireTusVersion(head)
        try requireOffsetStream(head)
        guard let offsetText = head["Upload-Offset"] else { throw HTTPError.badRequest("PATCH needs Upload-Offset.") }
        let offset = try TusHeaders.number(offsetText, "Upload-Offset")
        let length = try head["Upload-Length"].map { try TusHeaders.number($0, "Upload-Length") }
        let checksum = try head["Upload-Checksum"].map(TusHeaders.checksum)
        // The upload's key is read only when some bucket has subscriptions.
        let key = events.isIdle ? nil : try store.upload(id).key
        let append = try store.beginAppend(to: id, at: offset, length: length, lifetime: uploadLifetime,
                                           bodySize: head["Content-Length"].flatMap { UInt64($0) }, checksum: checksum,
                                           onlyCreate: onlyCreate, events: tusEvents(head, key: key))
        return receive(head, into: append, location: nil, recheck: recheck)
    }

    /// The events of a tus upload's completion (`ObjectCreated:Post`, as tusd's post-finish).
    private func tusEvents(_ head: HTTPRequestHead, key: BlobKey?) -> EventDraft? {
        key.flatMap { events.draft("ObjectCreated:Post", key: $0, head: head, dialect: "tus") }
    }

    /// The key a /v1 tus creation stores at (nil: content-addressed), if the caller may write
    /// there: 403 otherwise.
    private static func authorizedKey(_ metadata: [String: [UInt8]], _ caller: Principal) throws -> BlobKey? {
        let key = try metadata["key"].map { try BlobKey(validating: $0) }
        let requirement = writeRequirement(key)
        guard caller.grants.permits(requirement) else { throw HTTPError.forbidden(requirement) }
        return key
    }

    /// What writing the blob of an upload needs: write (or create) on its key, or on every key
    /// when it is content-addressed.
    static func writeRequirement(_ key: BlobKey?) -> AccessRequirement {
        key.map { .key(.write, $0.bytes) } ?? .anyKey(.write)
    }

    /// Whether the caller may only create the upload's blob (grant `create`, not `write`).
    private static func onlyCreate(_ caller: Principal, _ upload: UploadRecord) -> Bool {
        let allowance = upload.key.map(caller.write) ?? caller.grants.writeAnywhere
        return allowance == .createOnly
    }

    /// The body of a creation (`location`, the new upload's URL) or of a PATCH (nil).
    private func receive(_ head: HTTPRequestHead, into append: UploadAppend, location: String?,
                         recheck: @escaping @Sendable () throws -> Void) -> HTTPRequestAction {
        guard head.hasBody else { return .respond(finishAppend(append, failure: nil, location: location)) }
        // The fsync, and at the last byte the blob's commit, run on the commit pool: the worker
        // thread goes on serving its other connections meanwhile. A newer request of this upload
        // that stops this one also shuts its connection down.
        return .receive(StreamingBody(
            committers: committers, metrics: metrics, write: { try append.write($0) }, abandon: { append.abandon() },
            attach: { connection in append.whenPreempted { connection.close() } },
            end: { [self] failure, respond in
                let failure = failure ?? Self.failure(of: recheck)
                guard failure == nil, let hooks, hooks.runs(.preFinish), append.reachesLength else {
                    return respond(finishAppend(append, failure: failure, location: location))
                }
                preFinish(head, append, hooks: hooks, location: location, then: respond)
            }))
    }

    /// The last bytes of an upload have arrived: they are verified, then the pre-finish hook
    /// decides whether the blob is committed.
    private func preFinish(_ head: HTTPRequestHead, _ append: UploadAppend, hooks: BlockingHooks, location: String?,
                           then respond: @escaping (HTTPResponse) -> Void) {
        do {
            try append.verify()
        } catch {
            return respond(finishAppend(append, failure: error, location: location))
        }
        let record = append.upload
        let metadata = ((try? TusHeaders.metadata(record.metadata)) ?? [:]).mapValues { String(decoding: $0, as: UTF8.self) }
        let upload = HookUpload(id: record.id, size: record.length, offset: record.offset, metadata: metadata,
                                storage: record.key.map { ["Type": "blobd", "Key": $0.rawValue] })
        hooks.preFinish(head, upload: upload) { [self] outcome in
            switch outcome {
            case .proceed(let changes):
                var response = finishAppend(append, failure: nil, location: location)
                response.headers += changes.headers
                respond(response)
            case .reject(var response):
                append.cancel()
                response.headers.append(Self.tusResumable)
                respond(response)
            case .fail(let error):
                respond(finishAppend(append, failure: error, location: location))
            }
        }
    }

    /// The error `check` throws, if it does.
    private static func failure(of check: () throws -> Void) -> (any Error)? {
        do {
            try check()
            return nil
        } catch {
            return error
        }
    }

    /// A failure as tus answers it.
    private func tusFailure(_ error: any Error) -> HTTPResponse {
        var response = failure(error)
        response.headers.append(Self.tusResumable)
        return response
    }

    /// Saves the bytes of a request (or rolls them back) and describes the upload.
    private func finishAppend(_ append: UploadAppend, failure: (any Error)?, location: String?) -> HTTPResponse {
        var response: HTTPResponse
        do {
            if let failure { throw failure }
            let upload = try append.finish()
            response = HTTPResponse(status: location != nil ? 201 : 204, headers: uploadHeaders(upload))
        } catch {
            append.cancel()
            response = self.failure(error)
            response.headers.append(Self.tusResumable)
        }
        if let location { response.headers.append(("Location", location)) }
        return response
    }

    private func requireOffsetStream(_ head: HTTPRequestHead) throws(HTTPError) {
        let mediaType = head["Content-Type"]?.split(separator: ";").first?.trimmingOWS().lowercased()
        guard mediaType == "application/offset+octet-stream" else {
            throw .unsupportedMediaType("Upload data must be sent as Content-Type: application/offset+octet-stream.")
        }
    }

    /// The tus headers describing an upload.
    func uploadHeaders(_ upload: UploadRecord) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = [Self.tusResumable, ("Upload-Offset", String(upload.offset))]
        if let length = upload.length {
            headers.append(("Upload-Length", String(length)))
        } else {
            headers.append(("Upload-Defer-Length", "1"))
        }
        if !upload.metadata.isEmpty { headers.append(("Upload-Metadata", upload.metadata)) }
        headers.append(("Upload-Expires", HTTPDate.format(upload.expires)))
        if let key = upload.completedKey { headers.append(("Content-Location", publicLocation(of: key))) }
        return headers
    }

    static func location(ofUpload id: String) -> String {
        "/v1/uploads/" + id
    }
}

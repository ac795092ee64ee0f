import BlobStore
import HTTPCore
import MicroHTTPD

extension BlobService {
    /// What a share link adds to a download: its `Content-Disposition`, and the count of a GET
    /// that sends the blob's bytes (it throws when the link's downloads are used up).
    struct ShareDownload: Sendable {
        let disposition: String
        let count: @Sendable () throws -> Void
    }

    /// GET and HEAD of a blob. The index lookup may wait on a database; the connection is
    /// suspended meanwhile, and the response is made on its worker thread.
    /// In a versioned bucket (`versioning`) the answer names the version in `Blob-Version`.
    func read(_ head: HTTPRequestHead, key: BlobKey, share: ShareDownload? = nil,
              versioning: BucketVersioning = .unversioned) -> HTTPRequestAction {
        BlobRead.later(store, key, open: { [store] in try store.open(key, found: $0) },
                       answer: { [self] blob in
                           var response = try read(head, blob: blob, share: share)
                           response.headers += Self.versionHeaders(blob.record, versioning)
                           return response
                       }, failure: { [self] in failure($0) })
    }

    /// GET and HEAD of an open blob: preconditions, then the whole blob, one range or several.
    /// A share link's GET counts once it is known to send bytes (not for 304, 412 or 416).
    func read(_ head: HTTPRequestHead, blob: OpenBlob, share: ShareDownload?) throws -> HTTPResponse {
        let record = blob.record
        let etag = EntityTag(version: record.version).headerValue
        switch Preconditions(head).evaluate(current: record, safe: true) {
        case .proceed: break
        case .notModified:
            // RFC 9110 §15.4.5: a 304 carries the Cache-Control a 200 would.
            var headers = [("ETag", etag)]
            if let cacheControl = record.cacheControl { headers.append(("Cache-Control", cacheControl)) }
            return HTTPResponse(status: 304, headers: headers)
        case .failed: throw StoreError.preconditionFailed
        }
        let plan = rangePlan(head, record: record)
        if case .unsatisfiable = plan { throw HTTPError.rangeNotSatisfiable(size: record.size) }
        if let share, head.method == "GET" { try share.count() }
        var headers = Self.blobHeaders(record, etag: etag, disposition: share?.disposition)
        headers += LifecycleSettings.headers(record, store: store)
        switch plan {
        case .full:
            headers.append(("Content-Type", record.contentType))
            return HTTPResponse(status: 200, headers: headers, body: try BodyPlan.body(of: blob, ByteRange(start: 0, end: record.size &- 1)))
        case .single(let range):
            headers.append(("Content-Type", record.contentType))
            headers.append(("Content-Range", range.contentRange(size: record.size)))
            return HTTPResponse(status: 206, headers: headers, body: try BodyPlan.body(of: blob, range))
        case .multiple(let ranges):
            let body = MultipartBody(blob: blob, ranges: ranges)
            headers.append(("Content-Type", body.contentType))
            return HTTPResponse(status: 206, headers: headers, body: .stream(length: body.length, reader: body))
        case .unsatisfiable:
            throw HTTPError.rangeNotSatisfiable(size: record.size)
        }
    }

    /// The headers of a 200 or 206 but its Content-Type (and Content-Range); `disposition`
    /// replaces the blob's own Content-Disposition.
    private static func blobHeaders(_ record: BlobRecord, etag: String, disposition: String?) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = [
            ("Accept-Ranges", "bytes"),
            ("ETag", etag),
            ("Last-Modified", HTTPDate.format(record.modified)),
            ("Repr-Digest", DigestField.format(sha256: record.sha256)),
        ]
        if let cacheControl = record.cacheControl { headers.append(("Cache-Control", cacheControl)) }
        if let disposition = disposition ?? record.contentDisposition { headers.append(("Content-Disposition", disposition)) }
        if let encoding = record.attributes.contentEncoding { headers.append(("Content-Encoding", encoding)) }
        if let language = record.attributes.contentLanguage { headers.append(("Content-Language", language)) }
        if let expires = record.attributes.expires { headers.append(("Expires", expires)) }
        headers += ActiveContent.headers(contentType: record.contentType)
        for field in record.attributes.userMetadata { headers.append((metadataFieldName(field.name), field.value)) }
        return headers
    }

    /// The Range plan, or `.full` when there is no usable Range or If-Range does not match.
    /// HEAD gets the same headers GET would (RFC 9110 §9.3.2), so ranges apply to it as well.
    private func rangePlan(_ head: HTTPRequestHead, record: BlobRecord) -> RangePlan {
        let values = head.values(of: "Range")
        guard values.count == 1, let specs = ByteRangeSpec.parseHeader(values[0]) else { return .full }
        if let ifRange = head["If-Range"] {
            let validator = ifRange.trimmingOWS()
            if let tag = EntityTag.parse(validator) {
                guard tag.strongMatches(EntityTag(version: record.version)) else { return .full }
            } else {
                guard HTTPDate.parse(String(validator)) == record.modified else { return .full }
            }
        }
        return RangePlan.plan(specs, size: record.size)
    }

    /// `Blob-Meta-Name` for the stored (lowercase) metadata name `name`: each word capitalised,
    /// as header fields are usually written (names are case-insensitive either way).
    static func metadataFieldName(_ name: String) -> String {
        "Blob-Meta-" + name.split(separator: "-", omittingEmptySubsequences: false).map { $0.prefix(1).uppercased() + $0.dropFirst() }
            .joined(separator: "-")
    }
}

import Foundation
import HTTPCore
import BlobStore
import MicroHTTPD

/// GetObject and HeadObject: preconditions, a part or one range, response-* overrides.
extension S3Service {
    /// GetObject and HeadObject: preconditions, then the whole object or one range.
    /// `anonymous`: an unsigned request under public read, which may not override headers (as
    /// in S3: a `response-content-type` could otherwise serve a stored file as HTML).
    func read(_ head: HTTPRequestHead, bucket: String, key: String, query: [(name: String, value: [UInt8])],
              anonymous: Bool, requestID: String) throws -> HTTPRequestAction {
        let overrides = try Self.responseOverrides(query)
        guard overrides.isEmpty || !anonymous else {
            throw S3Error(.invalidRequest, "Request specific response headers cannot be used for anonymous GET requests.")
        }
        if let id = Self.value("versionId", in: query) {
            return .respond(try readVersion(head, bucket: bucket, key: key, id: id, query: query, overrides: overrides, requestID: requestID))
        }
        let blobKey = try Self.blobKey(bucket, key)
        let versioning = versioning(of: bucket)
        return BlobRead.later(store, blobKey, open: { [self] in try openObject(bucket, key, found: $0) },
                              answer: { [self] blob in
                                  var response = try read(head, blob: blob, query: query, overrides: overrides, requestID: requestID)
                                  response.headers += Self.versionHeaders(blob.record, versioning) + Self.lockHeaders(blob.record)
                                  return response
                              },
                              failure: { [self] error in
                                  if versioning != .unversioned, (error as? StoreError) == .notFound,
                                     let answer = deleteMarkerAnswer(head, bucket: bucket, key: key, requestID: requestID) {
                                      return answer
                                  }
                                  return failure(error, head: head, bucket: bucket, key: key, requestID: requestID)
                              })
    }

    /// GetObject and HeadObject of an open object.
    func read(_ head: HTTPRequestHead, blob: OpenBlob, query: [(name: String, value: [UInt8])],
                      overrides: [(name: String, value: String)], requestID: String) throws -> HTTPResponse {
        let record = blob.record
        let etag = Self.etag(record)
        var headers: [(name: String, value: String)] = [
            ("ETag", etag), ("Last-Modified", HTTPDate.format(record.modified)), ("Accept-Ranges", "bytes"),
            ("x-amz-request-id", requestID),
        ]
        if let cacheControl = record.cacheControl { headers.append(("Cache-Control", cacheControl)) }
        switch Preconditions(head, acceptingUnquotedTags: true).evaluate(current: record, safe: true, entityTag: Self.entityTag) {
        case .proceed: break
        case .notModified: return HTTPResponse(status: 304, headers: Self.overriding(headers, with: overrides))
        case .failed: throw StoreError.preconditionFailed
        }
        headers += Self.representationHeaders(record)
        headers += expirationHeaders(record)
        let checksumMode = head["x-amz-checksum-mode"]?.uppercased() == "ENABLED"
        var checksums = checksumMode ? Self.checksumHeaders(record, orSHA256: true) : []
        var range = record.size == 0 ? nil : ByteRange(start: 0, end: record.size - 1)
        var status = 200
        // S3 serves one range; a header it cannot use is ignored (the whole object).
        let values = head.values(of: "Range")
        if let partNumber = try Self.partNumber(query, hasRange: !values.isEmpty) {
            let part = try Self.part(partNumber, of: record, checksumMode: checksumMode)
            range = part.range
            if part.range != nil { status = 206 }
            headers += part.headers
            checksums = part.checksums
        } else if values.count == 1, let single = try Self.singleRange(values[0], of: record) {
            range = single
            status = 206
            headers.append(("Content-Range", single.contentRange(size: record.size)))
            checksums = []  // a checksum covers the whole object (or part), not a range of it
        }
        headers += checksums
        headers = Self.overriding(headers, with: overrides)
        // After the overrides: a response-content-type of text/html is as active as a stored one.
        headers += ActiveContent.headers(contentType: headers.last { $0.name == "Content-Type" }?.value)
        return HTTPResponse(status: status, headers: headers, body: try BodyPlan.body(of: blob, range))
    }

    /// The stored representation headers of `record`.
    private static func representationHeaders(_ record: BlobRecord) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = [("Content-Type", record.contentType)]
        if let disposition = record.contentDisposition { headers.append(("Content-Disposition", disposition)) }
        if let encoding = record.attributes.contentEncoding { headers.append(("Content-Encoding", encoding)) }
        if let expires = record.attributes.expires { headers.append(("Expires", expires)) }
        for field in record.attributes.userMetadata { headers.append(("x-amz-meta-" + field.name, field.value)) }
        if let language = record.attributes.contentLanguage { headers.append(("Content-Language", language)) }
        return headers
    }

    /// Part `partNumber` of `record`: a part is the range of its bytes (nil when empty); an
    /// object uploaded in one piece is its part 1. With its Content-Range and part count, and
    /// (`checksumMode`) its own checksum: a composite checksum is made of the parts' own.
    private static func part(_ partNumber: Int, of record: BlobRecord, checksumMode: Bool)
        throws -> (range: ByteRange?, headers: [(name: String, value: String)], checksums: [(name: String, value: String)]) {
        let sizes: [UInt64]
        if let partSizes = record.partSizes {
            sizes = partSizes
        } else if record.parts == nil {
            sizes = [record.size]
        } else {
            // Completed before blobd kept part sizes: no silent whole object.
            throw S3Error(.notImplemented, "This multipart object was stored without its part sizes; use a Range.")
        }
        guard partNumber <= sizes.count else { throw S3Error(.invalidPartNumber, "The requested partnumber is not satisfiable") }
        let start = sizes[..<(partNumber - 1)].reduce(0, +)
        let length = sizes[partNumber - 1]
        var range: ByteRange?
        var headers: [(name: String, value: String)] = []
        if length > 0 {
            let part = ByteRange(start: start, end: start + length - 1)
            range = part
            headers.append(("Content-Range", part.contentRange(size: record.size)))
        }
        if record.parts != nil { headers.append(("x-amz-mp-parts-count", "\(sizes.count)")) }
        var checksums: [(name: String, value: String)] = []
        if checksumMode, let (algorithm, value) = ChecksumAlgorithm.split(record.checksum), value.contains("-"),
           let partChecksums = record.partChecksums, partChecksums.count == sizes.count {
            checksums = [(algorithm.field, partChecksums[partNumber - 1]), ("x-amz-checksum-type", "COMPOSITE")]
        }
        return (range, headers, checksums)
    }

    /// The one range a Range header `value` asks of `record`; nil when S3 would ignore the
    /// header (several ranges, or one it cannot parse).
    private static func singleRange(_ value: String, of record: BlobRecord) throws -> ByteRange? {
        guard let specs = ByteRangeSpec.parseHeader(value), specs.count == 1 else { return nil }
        switch RangePlan.plan(specs, size: record.size) {
        case .single(let single):
            return single
        case .unsatisfiable:
            var error = S3Error(.invalidRange, "The requested range is not satisfiable")
            error.headers = [("Content-Range", "bytes */\(record.size)")]
            throw error
        default:
            return nil
        }
    }

    /// The `partNumber` of a GetObject or HeadObject (1 to 10,000), which excludes a Range.
    static func partNumber(_ query: [(name: String, value: [UInt8])], hasRange: Bool) throws -> Int? {
        guard let text = value("partNumber", in: query) else { return nil }
        guard let number = Int(text), (1...10_000).contains(number) else {
            throw S3Error(.invalidArgument, "Part number must be an integer between 1 and 10000, inclusive.")
        }
        guard !hasRange else { throw S3Error(.invalidRequest, "Cannot specify both Range header and partNumber query parameter.") }
        return number
    }

    /// The `response-*` query parameters of GetObject and HeadObject, which set the answer's
    /// headers of the same name (a signed URL handed out can so name the download's file).
    static let responseOverrideHeaders = [
        ("response-content-type", "Content-Type"), ("response-content-language", "Content-Language"),
        ("response-expires", "Expires"), ("response-cache-control", "Cache-Control"),
        ("response-content-disposition", "Content-Disposition"), ("response-content-encoding", "Content-Encoding"),
    ]

    static func responseOverrides(_ query: [(name: String, value: [UInt8])]) throws -> [(name: String, value: String)] {
        var overrides: [(name: String, value: String)] = []
        for item in query where item.name.hasPrefix("response-") {
            guard let header = responseOverrideHeaders.first(where: { $0.0 == item.name })?.1 else { continue }
            guard item.value.allSatisfy({ (0x20...0x7E).contains($0) || $0 == 0x09 }), item.value.count <= 1024 else {
                throw S3Error(.invalidArgument, "\(item.name) must be at most 1024 bytes of visible ASCII, spaces and tabs.")
            }
            overrides.append((header, String(decoding: item.value, as: UTF8.self)))
        }
        return overrides
    }

    /// `headers` with each of `overrides` in place of the field of that name.
    static func overriding(_ headers: [(name: String, value: String)], with overrides: [(name: String, value: String)])
        -> [(name: String, value: String)] {
        guard !overrides.isEmpty else { return headers }
        return headers.filter { header in !overrides.contains { $0.name == header.name } } + overrides
    }
}

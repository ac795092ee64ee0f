import HTTPCore
import BlobStore
import MicroHTTPD
import Access

extension S3Service {
    /// CreateMultipartUpload (`POST /BUCKET/KEY?uploads`), with the checksum its parts carry and
    /// the Object Lock its version gets at Complete (`x-amz-object-lock-*`, kept in the upload's row).
    func createMultipart(_ head: HTTPRequestHead, bucket: String, key: String, authorized: Authorized?, caller: Principal,
                         requestID: String) throws -> HTTPResponse {
        let checksum = try MultipartChecksum(head)
        let blobKey = try blobKey(bucket, key)
        let lock = try requestedLock(head, bucket: bucket, key: blobKey, caller: caller)
        // Counted against the access key, or without one (open access) the client's address.
        let owner = authorized.map { $0.keyID.map { "key:" + $0 } ?? "s3:" + $0.accessKey } ?? access.addressOwner(head)
        let upload = try store.createMultipart(key: blobKey, attributes: try Self.attributes(head, key: key),
                                               lifetime: store.options.uploadExpiry, checksum: checksum?.stored, owner: owner, lock: lock)
        var response = xmlResponse(XML.declaration + "<InitiateMultipartUploadResult xmlns=\"\(XML.namespace)\">"
            + XML.element("Bucket", bucket) + XML.element("Key", key) + XML.element("UploadId", upload.id)
            + "</InitiateMultipartUploadResult>", requestID: requestID)
        response.headers += checksum?.headers ?? []
        return response
    }

    /// UploadPart (`PUT /BUCKET/KEY?partNumber=N&uploadId=ID`): the part streams to its file.
    func receivePart(_ head: HTTPRequestHead, bucket: String, key: String, query: [(name: String, value: [UInt8])],
                     authorized: Authorized?, caller: Principal, requestID: String) throws -> HTTPRequestAction {
        let upload = try multipartUpload(bucket, key, query)
        guard let text = Self.value("partNumber", in: query), let number = Int(text), (1...10_000).contains(number) else {
            throw S3Error(.invalidArgument, "Part number must be an integer between 1 and 10000, inclusive.")
        }
        if head["x-amz-copy-source"] != nil {
            return try copyPart(head, upload: upload, number: number, caller: caller, requestID: requestID)
        }
        var payload = try Payload(head, authorized: authorized)
        // A part of an upload with a checksum has one in its algorithm: verified if sent,
        // computed if not (the object's checksum is made from them).
        let checksum = MultipartChecksum(stored: upload.checksum)
        if let algorithm = checksum?.algorithm {
            if let sent = payload.checksum, sent != algorithm {
                throw S3Error(.invalidRequest, "Checksum Type mismatch occurred, expected checksum Type: \(algorithm.rawValue), actual checksum Type: \(sent.rawValue)")
            }
            payload.checksum = algorithm
        }
        let digests = BodyDigests(checksum: payload.checksum, size: payload.size)
        let part = try store.beginPart(of: upload, number: number, expectedSize: payload.size, expectedSHA256: payload.expectedSHA256,
                                       hasher: digests.hasher)
        return try receive(head, into: PartSink(part: part, keepsChecksum: checksum != nil, requestID: requestID), payload: payload,
                           digests: digests, recheck: recheck(caller, try blobKey(bucket, key)), requestID: requestID)
    }

    /// CompleteMultipartUpload (`POST /BUCKET/KEY?uploadId=ID`): the part list is read, then the
    /// object is assembled and committed on the commit pool. A repeated Complete answers again.
    func receiveComplete(_ head: HTTPRequestHead, bucket: String, key: String, query: [(name: String, value: [UInt8])],
                         caller: Principal, requestID: String) throws -> HTTPRequestAction {
        let blobKey = try blobKey(bucket, key)
        guard let id = Self.value("uploadId", in: query) else { throw S3Error(.invalidArgument, "uploadId is missing.") }
        let preconditions = Preconditions(head, acceptingUnquotedTags: true)
        let expected = try Self.bufferedPayloadHash(head)
        return .receive(BufferedBody(limit: 1 << 20, committers: committers) { [self] body in
            do {
                try Self.check(body, against: expected)
                if let completed = try store.completedMultipart(id, key: blobKey) {
                    return completeResult(bucket: bucket, key: key, etag: completed.etag, checksum: completed.checksum, requestID: requestID)
                }
                let upload = try store.multipart(id, key: blobKey)
                let condition = try writeCondition(preconditions, key: blobKey, caller: caller)
                let parts = try Self.partList(body)
                if let rejection = try preFinishComplete(head, bucket: bucket, key: key) { return rejection }
                let checksum = ObjectChecksum(MultipartChecksum(stored: upload.checksum), head: head, listed: parts)
                let (record, etag) = try store.completeMultipart(upload, parts: parts.map { ($0.number, $0.md5) },
                                                                 reading: checksum.map { checksum in { checksum.update($0) } },
                                                                 checksum: { chosen throws(StoreError) in try checksum?.value(of: chosen) },
                                                                 if: condition,
                                                                 events: events("ObjectCreated:CompleteMultipartUpload", blobKey, head, requestID))
                var response = completeResult(bucket: bucket, key: key, etag: etag, checksum: record.checksum, requestID: requestID)
                response.headers += Self.versionHeaders(record, condition.versioning)
                return response
            } catch {
                return failure(error, head: head, bucket: bucket, key: key, requestID: requestID)
            }
        })
    }

    /// The answer to a Complete; `checksum` is the object's (`sha256:BASE64-N`), if it has one.
    private func completeResult(bucket: String, key: String, etag: String, checksum: String?, requestID: String) -> HTTPResponse {
        let xml = XML.declaration + "<CompleteMultipartUploadResult xmlns=\"\(XML.namespace)\">"
            + XML.element("Location", "/\(bucket)/\(PercentEncoding.encodePath(key))") + XML.element("Bucket", bucket)
            + XML.element("Key", key) + XML.element("ETag", etag) + Self.checksumElements(Self.checksumHeaders(checksum: checksum))
        return xmlResponse(xml + "</CompleteMultipartUploadResult>", requestID: requestID)
    }

    /// The `<Part><PartNumber>N</PartNumber><ETag>"…"</ETag></Part>` list of a Complete, with
    /// each part's `<ChecksumCRC32>` (or another algorithm's) when the client sent one.
    static func partList(_ body: [UInt8]?) throws -> [(number: Int, md5: [UInt8], checksum: String?)] {
        guard let body else { throw XMLReader.malformed }
        let root = try XML.parse(body, maxChildren: maxCompleteParts)
        let parts = root.children.filter { $0.name == "Part" }
        guard root.name == "CompleteMultipartUpload", !parts.isEmpty else { throw XMLReader.malformed }
        return try parts.map { part in
            guard let number = part.value("PartNumber").flatMap({ Int($0) }), let etag = part.value("ETag") else {
                throw S3Error(.malformedXML, "Every Part needs a PartNumber and an ETag.")
            }
            guard let md5 = hexBytes(etag.filter { $0 != "\"" }), md5.count == 16 else { throw StoreError.invalidPart(number: number) }
            let checksum = ChecksumAlgorithm.allCases.lazy.compactMap { part.value($0.element) }.first
            return (number, md5, checksum)
        }
    }

    /// Parts one Complete lists at most, as in S3 (MalformedXML past it, at the first one more).
    static let maxCompleteParts = 10_000

    /// AbortMultipartUpload (`DELETE /BUCKET/KEY?uploadId=ID`).
    func abortMultipart(bucket: String, key: String, query: [(name: String, value: [UInt8])], requestID: String) throws -> HTTPResponse {
        try store.abortMultipart(try multipartUpload(bucket, key, query))
        return HTTPResponse(status: 204, headers: [("x-amz-request-id", requestID)])
    }

    /// ListParts (`GET /BUCKET/KEY?uploadId=ID`).
    func listParts(bucket: String, key: String, query: [(name: String, value: [UInt8])], requestID: String) throws -> HTTPResponse {
        let upload = try multipartUpload(bucket, key, query)
        let marker = Self.value("part-number-marker", in: query).flatMap { Int($0) } ?? 0
        let maxParts = try Self.pageSize("max-parts", Self.value("max-parts", in: query), least: 1)
        let all = try store.parts(of: upload.id).filter { $0.number > marker }
        let checksum = MultipartChecksum(stored: upload.checksum)
        let page = all.prefix(maxParts)
        var xml = XML.declaration + "<ListPartsResult xmlns=\"\(XML.namespace)\">" + XML.element("Bucket", bucket)
            + XML.element("Key", key) + XML.element("UploadId", upload.id) + Self.owner.replacingOccurrences(of: "Owner", with: "Initiator")
            + Self.owner + XML.element("StorageClass", "STANDARD") + (checksum?.elements ?? "")
            + XML.element("PartNumberMarker", String(marker))
        if let last = page.last, all.count > page.count { xml += XML.element("NextPartNumberMarker", String(last.number)) }
        xml += XML.element("MaxParts", String(maxParts)) + XML.element("IsTruncated", all.count > page.count ? "true" : "false")
        for part in page {
            xml += "<Part>" + XML.element("PartNumber", String(part.number)) + XML.element("LastModified", Self.isoDate(part.modified))
                + XML.element("ETag", "\"\(hex(part.md5))\"") + XML.element("Size", String(part.size))
            if let algorithm = checksum?.algorithm, let value = part.checksum {
                xml += XML.element(algorithm.element, value)
            }
            xml += "</Part>"
        }
        return xmlResponse(xml + "</ListPartsResult>", requestID: requestID)
    }

    /// ListMultipartUploads (`GET /BUCKET?uploads`), with prefix.
    func listMultipartUploads(bucket: String, query: [(name: String, value: [UInt8])], requestID: String) throws -> HTTPResponse {
        try requireBucket(bucket)
        func value(_ name: String) -> String? { Self.value(name, in: query) }
        let prefix = value("prefix") ?? ""
        let delimiter = value("delimiter").flatMap { $0.isEmpty ? nil : $0 }
        let keyMarker = value("key-marker") ?? ""
        let uploadIDMarker = keyMarker.isEmpty ? "" : value("upload-id-marker") ?? ""
        let maxUploads = try Self.pageSize("max-uploads", value("max-uploads"))
        let urlEncoded = value("encoding-type") == "url"
        func encoded(_ text: String) -> String {
            urlEncoded ? PercentEncoding.encodeComponent(text.utf8).replacingOccurrences(of: "%2F", with: "/") : text
        }
        // Uploads come by key, then by id. After the key marker: later keys, and with an upload
        // id marker also the marker key's uploads with greater ids (whether or not the marker's
        // upload still exists: a client may abort each upload of a page before asking for the next).
        let all = try store.multipartUploads(prefix: Array((bucket + "/" + prefix).utf8))
            .sorted { a, b in a.key != b.key ? a.key < b.key : a.id < b.id }
            .map { (key: String($0.key.rawValue.dropFirst(bucket.count + 1)), upload: $0) }
        let (uploads, commonPrefixes, truncated) = Self.page(of: all, prefix: prefix, delimiter: delimiter, keyMarker: keyMarker,
                                                             uploadIDMarker: uploadIDMarker, maxUploads: maxUploads)
        var xml = XML.declaration + "<ListMultipartUploadsResult xmlns=\"\(XML.namespace)\">" + XML.element("Bucket", bucket)
            + XML.element("KeyMarker", encoded(keyMarker)) + XML.element("UploadIdMarker", uploadIDMarker)
            + XML.element("Prefix", encoded(prefix)) + (delimiter.map { XML.element("Delimiter", encoded($0)) } ?? "")
            + XML.element("MaxUploads", String(maxUploads)) + XML.element("IsTruncated", truncated ? "true" : "false")
        if urlEncoded { xml += XML.element("EncodingType", "url") }
        if truncated {
            // The last listed entry: an upload, or a common prefix (whose uploads all follow it).
            let lastUpload = uploads.last.map { ($0.key, $0.upload.id) }
            let last = commonPrefixes.last.map { common in lastUpload.map { Self.precedes(common, $0.0) ? $0 : (common, "") } ?? (common, "") } ?? lastUpload
            if let last {
                xml += XML.element("NextKeyMarker", encoded(last.0)) + XML.element("NextUploadIdMarker", last.1)
            }
        }
        for entry in uploads {
            xml += "<Upload>" + XML.element("Key", encoded(entry.key))
                + XML.element("UploadId", entry.upload.id) + Self.owner.replacingOccurrences(of: "Owner", with: "Initiator") + Self.owner
                + XML.element("StorageClass", "STANDARD") + XML.element("Initiated", Self.isoDate(entry.upload.created))
                + (MultipartChecksum(stored: entry.upload.checksum)?.elements ?? "") + "</Upload>"
        }
        for common in commonPrefixes { xml += "<CommonPrefixes>" + XML.element("Prefix", encoded(common)) + "</CommonPrefixes>" }
        return xmlResponse(xml + "</ListMultipartUploadsResult>", requestID: requestID)
    }

    /// S3 orders keys by their UTF-8 bytes.
    private static func precedes(_ a: String, _ b: String) -> Bool { a.utf8.lexicographicallyPrecedes(b.utf8) }

    /// The page of ListMultipartUploads in `all` (by key, then id): what follows the markers, up
    /// to `maxUploads` uploads and common prefixes together.
    private static func page(of all: [(key: String, upload: MultipartUpload)], prefix: String, delimiter: String?, keyMarker: String,
                             uploadIDMarker: String, maxUploads: Int)
        -> (uploads: [(key: String, upload: MultipartUpload)], commonPrefixes: [String], truncated: Bool) {
        let start = all.firstIndex { entry in
            precedes(keyMarker, entry.key) || (!uploadIDMarker.isEmpty && entry.key == keyMarker && precedes(uploadIDMarker, entry.upload.id))
        } ?? all.endIndex
        var uploads: [(key: String, upload: MultipartUpload)] = []
        var commonPrefixes: [String] = []
        var truncated = false
        for entry in all[start...] {
            if let delimiter, let common = Self.commonPrefix(of: entry.key, prefix: prefix, delimiter: delimiter) {
                if commonPrefixes.last == common || !precedes(keyMarker, common) { continue }
                if uploads.count + commonPrefixes.count == maxUploads { truncated = maxUploads > 0; break }
                commonPrefixes.append(common)
            } else {
                if uploads.count + commonPrefixes.count == maxUploads { truncated = maxUploads > 0; break }
                uploads.append(entry)
            }
        }
        return (uploads, commonPrefixes, truncated)
    }

    private func multipartUpload(_ bucket: String, _ key: String, _ query: [(name: String, value: [UInt8])]) throws -> MultipartUpload {
        guard let id = Self.value("uploadId", in: query) else { throw S3Error(.invalidArgument, "uploadId is missing.") }
        do {
            return try store.multipart(id, key: try blobKey(bucket, key))
        } catch StoreError.uploadNotFound {
            throw S3Error(.noSuchUpload, "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.")
        }
    }

}

/// One part of a multipart upload: fsynced, then listed (with its checksum when its upload
/// has one).
final class PartSink: S3BodySink {
    private let part: PartWriteStream
    private let keepsChecksum: Bool
    private let requestID: String

    init(part: PartWriteStream, keepsChecksum: Bool, requestID: String) {
        self.part = part
        self.keepsChecksum = keepsChecksum
        self.requestID = requestID
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws(StoreError) { try part.write(bytes) }

    func digests() throws(StoreError) -> BodyHasher.Digests { try part.digests() }

    func complete(md5: [UInt8], checksum: String?, then respond: @escaping (Result<HTTPResponse, any Error>) -> Void) {
        respond(Result { () throws(StoreError) in
            // `crc32:BASE64`: answered, and kept when the upload has a checksum (its parts' make
            // the object's).
            let verified = ChecksumAlgorithm.split(checksum)
            let saved = try part.finish(md5: md5, checksum: keepsChecksum ? verified?.value : nil)
            var headers = [("ETag", "\"\(hex(saved.md5))\""), ("x-amz-request-id", requestID)]
            if let verified { headers.append((verified.algorithm.field, verified.value)) }
            return HTTPResponse(status: 200, headers: headers)
        }.mapError { $0 })
    }

    func abandon() { part.abandon() }

    func attach(_ connection: HTTPConnectionHandle) {
        part.whenPreempted { connection.close() }
    }
}

/// The checksum a Complete gives the object, for an upload that has one: made from the parts'
/// (COMPOSITE), or computed over the bytes as they are assembled (FULL_OBJECT). A part whose
/// listed checksum differs from its own is an InvalidPart; an object checksum the client sent
/// (`x-amz-checksum-ALGORITHM`) that differs is a BadDigest, and nothing is committed.
final class ObjectChecksum {
    private let kind: MultipartChecksum
    private var hasher: ChecksumHasher
    private let expected: String?
    private let listed: [Int: String]

    init?(_ kind: MultipartChecksum?, head: HTTPRequestHead, listed parts: [(number: Int, md5: [UInt8], checksum: String?)]) {
        guard let kind else { return nil }
        self.kind = kind
        hasher = ChecksumHasher(kind.algorithm)
        expected = head[kind.algorithm.field].map { String($0.trimmingOWS()) }
        listed = Dictionary(parts.compactMap { part in part.checksum.map { (part.number, $0) } }, uniquingKeysWith: { $1 })
    }

    /// The next bytes of the object.
    func update(_ bytes: UnsafeRawBufferPointer) {
        if !kind.composite { hasher.update(bytes) }
    }

    /// The object's checksum as `BlobRecord.checksum` keeps it (`sha256:BASE64-3`), once every
    /// byte went through `update`.
    func value(of parts: [UploadedPart]) throws(StoreError) -> String {
        for part in parts where listed[part.number].map({ $0 != part.checksum }) ?? false {
            throw .invalidPart(number: part.number)
        }
        guard let value = kind.composite ? kind.composite(of: parts) : hasher.value() else { throw .checksumMismatch }
        // A composite checksum may be sent with or without its part count.
        if let expected, expected != value, !(kind.composite && value.hasPrefix(expected + "-")) { throw .checksumMismatch }
        return "\(kind.algorithm.rawValue):\(value)"
    }
}

import Foundation
import HTTPCore
import BlobStore
import MicroHTTPD
import Access

extension S3Service {
    // MARK: PutObject

    /// PutObject: the body streams into the store and is verified before the atomic commit:
    /// against a hex x-amz-content-sha256, or chunk by chunk and by its trailer checksum when it
    /// comes aws-chunked.
    func receiveObject(_ head: HTTPRequestHead, bucket: String, key: String, authorized: Authorized?, caller: Principal,
                       requestID: String) throws -> HTTPRequestAction {
        let blobKey = try blobKey(bucket, key)
        let payload = try Payload(head, authorized: authorized)
        guard payload.size != nil || head["Transfer-Encoding"] != nil else {
            throw S3Error(.missingContentLength, "You must provide the Content-Length HTTP header.")
        }
        var condition = try writeCondition(Preconditions(head, acceptingUnquotedTags: true), key: blobKey, caller: caller)
        condition.newLock = try requestedLock(head, bucket: bucket, key: blobKey, caller: caller)
        let attributes = try Self.attributes(head, key: key)
        let digests = BodyDigests(checksum: payload.checksum, size: payload.size)
        let stream = try store.beginWrite(expectedSize: payload.size, expectedSHA256: payload.expectedSHA256, hasher: digests.hasher)
        let preFinish = hooks.flatMap { hooks in
            hooks.runs(.preFinish) ? (hooks, head, hookUpload(head, bucket: bucket, key: key, size: payload.size)) : nil
        }
        let sink = ObjectSink(stream: stream, key: blobKey, attributes: attributes, requestID: requestID,
                              condition: condition, events: events("ObjectCreated:Put", blobKey, head, requestID),
                              expiration: { [self] in expirationHeaders($0) }, preFinish: preFinish)
        return try receive(head, into: sink, payload: payload, digests: digests, recheck: recheck(caller, blobKey), requestID: requestID)
    }

    /// The condition a write commits with: the request's preconditions, and create only when
    /// the caller's grant is `create`. Checked early, before the body comes (the commit checks
    /// again). As S3 documents, an `If-Match` naming an ETag when there is no object is NoSuchKey
    /// (404), where HTTP would answer 412.
    func writeCondition(_ preconditions: Preconditions, key: BlobKey, caller: Principal) throws -> WriteCondition {
        var condition = preconditions.writeCondition(.content)
        condition.onlyCreate = caller.write(key) == .createOnly
        condition.versioning = versioning(of: key)
        guard !preconditions.isEmpty || condition.onlyCreate else { return condition }
        let current = try store.record(for: key)
        if current == nil, case .tags = preconditions.ifMatch { throw StoreError.notFound }
        if let failure = condition.failure(for: current) { throw failure }
        return condition
    }

    /// How a body comes (PutObject, UploadPart): what verifies it, and its decoded size.
    struct Payload {
        var expectedSHA256: [UInt8]?
        /// aws-chunked framing: how its chunks are signed (nil: unsigned or open access), and
        /// whether trailer lines follow.
        var chunked: (signing: AWSChunkedDecoder.Signing?, hasTrailer: Bool)?
        var size: UInt64?
        var expectedMD5: [UInt8]?
        /// The `x-amz-checksum-*` to compute and store (boto3 sends CRC-32 by default), and
        /// where its expected value comes from: a header, the trailer, or nowhere (only
        /// `x-amz-sdk-checksum-algorithm` named it).
        var checksum: ChecksumAlgorithm?
        var expectedChecksum: Expected = .none

        enum Expected {
            case none
            case header(String)
            case trailer
        }

        init(_ head: HTTPRequestHead, authorized: Authorized?) throws {
            let signing = authorized.flatMap { authorized in
                authorized.signed.map { signed in
                    AWSChunkedDecoder.Signing(key: SigV4.signingKey(secret: authorized.secret, signed), amzDate: signed.amzDate,
                                              scope: SigV4.scope(signed), previous: signed.signature)
                }
            }
            switch head["x-amz-content-sha256"] {
            case nil, "UNSIGNED-PAYLOAD":
                break
            case "STREAMING-AWS4-HMAC-SHA256-PAYLOAD":
                chunked = (signing, false)
            case "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER":
                chunked = (signing, true)
            case "STREAMING-UNSIGNED-PAYLOAD-TRAILER":
                chunked = (nil, true)
            case let value? where value.hasPrefix("STREAMING-"):
                throw S3Error(.notImplemented, "blobd does not support the payload mode \(value); use STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER], "
                              + "STREAMING-UNSIGNED-PAYLOAD-TRAILER, UNSIGNED-PAYLOAD or the body's SHA-256.")
            case let value?:
                guard let digest = S3Service.hexBytes(value), digest.count == 32 else {
                    throw S3Error(.invalidArgument, "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, a STREAMING-* mode or a hex SHA-256.")
                }
                expectedSHA256 = digest
            }
            size = head["Content-Length"].flatMap { UInt64($0) }
            if chunked != nil {
                guard let text = head["x-amz-decoded-content-length"] else {
                    throw S3Error(.missingContentLength, "An aws-chunked upload needs x-amz-decoded-content-length.")
                }
                // Digits only (UInt64 would take a sign), and a size a file and the index can have.
                guard !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let decoded = UInt64(text),
                      decoded <= UInt64(Int64.max) else {
                    throw S3Error(.invalidArgument, "x-amz-decoded-content-length must be a non-negative integer of at most 9223372036854775807.")
                }
                size = decoded
            }
            do {
                expectedMD5 = try UploadAttributes.contentMD5(head)
            } catch {
                throw S3Error(.invalidDigest, "The Content-MD5 you specified was invalid.")
            }
            try takeChecksum(head)
        }

        /// At most one checksum: a header, or a trailer the aws-chunked body ends with, or an
        /// algorithm alone, which blobd then computes and stores.
        private mutating func takeChecksum(_ head: HTTPRequestHead) throws {
            func set(_ algorithm: ChecksumAlgorithm, _ expected: Expected) throws {
                if let checksum, checksum != algorithm {
                    throw S3Error(.invalidRequest, "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.")
                }
                checksum = algorithm
                if case .none = expected { return }
                expectedChecksum = expected
            }
            for field in head.headers {
                let name = field.name.lowercased()
                guard name.hasPrefix(ChecksumAlgorithm.fieldPrefix), !ChecksumAlgorithm.optionFields.contains(name) else { continue }
                guard let algorithm = ChecksumAlgorithm(field: name) else {
                    throw S3Error(.invalidRequest, "\(field.name) is not a checksum blobd verifies (crc32, crc32c, crc64nvme, sha1, sha256).")
                }
                let value = String(field.value.trimmingOWS())
                guard algorithm.isWellFormed(value) else { throw S3Error(.invalidRequest, "Value for \(name) header is invalid.") }
                try set(algorithm, .header(value))
            }
            if let trailer = head["x-amz-trailer"]?.trimmingOWS(), !trailer.isEmpty {
                guard chunked?.hasTrailer == true else {
                    throw S3Error(.invalidRequest, "x-amz-trailer needs a STREAMING-*-TRAILER x-amz-content-sha256.")
                }
                guard let algorithm = ChecksumAlgorithm(field: String(trailer)) else {
                    throw S3Error(.invalidRequest, "The trailer \(trailer) is not an x-amz-checksum-* blobd verifies (crc32, crc32c, crc64nvme, sha1, sha256).")
                }
                try set(algorithm, .trailer)
            }
            for name in ["x-amz-sdk-checksum-algorithm", "x-amz-checksum-algorithm"] {
                guard let value = head[name] else { continue }
                let algorithm = try ChecksumAlgorithm(header: name, value)
                // The SDK's header says which checksum comes with the body; S3 refuses it alone.
                if name == "x-amz-sdk-checksum-algorithm", checksum == nil {
                    throw S3Error(.invalidRequest, "x-amz-sdk-checksum-algorithm specified, but no corresponding "
                                  + "x-amz-checksum-* or x-amz-trailer headers were found.")
                }
                try set(algorithm, .none)
            }
        }
    }

    /// What runs as the body of a write to `key` ends, before the commit: AccessDenied when the
    /// caller's key was revoked or lost the grant while the bytes arrived.
    func recheck(_ caller: Principal, _ key: BlobKey) -> @Sendable () throws -> Void {
        { [access] in try access.recheck(caller, .key(.write, key.bytes)) }
    }

    /// The body's consumer, decoding aws-chunked framing when the request has it; `recheck`
    /// runs once the body is verified, before the sink completes.
    func receive(_ head: HTTPRequestHead, into sink: any S3BodySink, payload: Payload, digests: BodyDigests,
                 recheck: @escaping @Sendable () throws -> Void, requestID: String) throws -> HTTPRequestAction {
        let decoder = payload.chunked.map { chunked in
            AWSChunkedDecoder(signing: chunked.signing, hasTrailer: chunked.hasTrailer, declaredLength: payload.size) {
                try sink.write($0)
            }
        }
        let end = S3BodyEnd(service: self, sink: sink, decoder: decoder, payload: payload, digests: digests, head: head,
                            recheck: recheck, requestID: requestID)
        let write: StreamingBody.Write = decoder.map { decoder in { try decoder.feed($0) } } ?? { try sink.write($0) }
        return .receive(StreamingBody(committers: committers, write: write, abandon: { sink.abandon() },
                                      attach: { sink.attach($0) }, end: end.complete))
    }

    /// What a PutObject, or a CopyObject with REPLACE, stores with the object: the standard
    /// headers and `x-amz-meta-*`; `aws-chunked` is dropped from Content-Encoding (it is framing).
    /// Without a Content-Type (or with curl's form default) the type is guessed from the key's
    /// extension, as aws-cli and rclone do before they send.
    static func attributes(_ head: HTTPRequestHead, key: String) throws -> BlobAttributes {
        let encoding = head["Content-Encoding"].map { value in
            value.split(separator: ",").map { $0.trimmingOWS() }.filter { $0.lowercased() != "aws-chunked" }.joined(separator: ", ")
        }
        let prefix = "x-amz-meta-"
        let metadata = head.headers.filter { $0.name.lowercased().hasPrefix(prefix) }
            .map { (name: String($0.name.dropFirst(prefix.count)), value: $0.value) }
        // S3 counts the UTF-8 bytes of every name and value, and allows 2 KB (so does /v1).
        guard UploadAttributes.userMetadataBytes(metadata) <= UploadAttributes.maxUserMetadataBytes else {
            throw S3Error(.metadataTooLarge, "Your metadata headers exceed the maximum allowed metadata size.")
        }
        return try UploadAttributes.parse(contentType: head["Content-Type"], cacheControl: head["Cache-Control"],
                                          contentDisposition: head["Content-Disposition"], contentEncoding: encoding,
                                          contentLanguage: head["Content-Language"], expires: head["Expires"], userMetadata: metadata,
                                          typeGuessedFrom: key)
    }

    static func hexBytes(_ text: String) -> [UInt8]? {
        let digits = Array(text.lowercased().utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        for i in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[i..<i + 2], as: UTF8.self), radix: 16) else { return nil }
            out.append(byte)
        }
        return out
    }

    /// A whole object's `x-amz-checksum-*`: the one its upload gave, or else (`orSHA256`) the
    /// full-object SHA-256 every blob has, whichever dialect stored it. One checksum per object,
    /// as in S3.
    static func checksumHeaders(_ record: BlobRecord, orSHA256: Bool) -> [(name: String, value: String)] {
        let stored = checksumHeaders(checksum: record.checksum)
        guard stored.isEmpty, orSHA256 else { return stored }
        return [(ChecksumAlgorithm.sha256.field, Data(record.sha256).base64EncodedString()), ("x-amz-checksum-type", "FULL_OBJECT")]
    }

    /// Checksum headers as S3's XML names them: `<ChecksumCRC32>…</ChecksumCRC32><ChecksumType>…`.
    static func checksumElements(_ headers: [(name: String, value: String)]) -> String {
        headers.map { name, value in
            XML.element(ChecksumAlgorithm(field: name)?.element ?? "ChecksumType", value)
        }.joined()
    }

    /// The headers of a stored checksum (`BlobRecord.checksum`, `crc32:BASE64`): its value and
    /// its type, COMPOSITE when it ends with a part count (`-3`; base64 has no `-`).
    static func checksumHeaders(checksum stored: String?) -> [(name: String, value: String)] {
        guard let (algorithm, value) = ChecksumAlgorithm.split(stored) else { return [] }
        return [(algorithm.field, value), ("x-amz-checksum-type", value.contains("-") ? "COMPOSITE" : "FULL_OBJECT")]
    }

    /// GetObjectAttributes (`GET /BUCKET/KEY?attributes`): what `x-amz-object-attributes` names
    /// of ETag (unquoted, as S3 writes it here), Checksum, ObjectParts (a multipart object's part
    /// count, and its parts' numbers and sizes, paged by `x-amz-max-parts` and
    /// `x-amz-part-number-marker`), StorageClass and ObjectSize.
    func objectAttributes(_ head: HTTPRequestHead, bucket: String, key: String, requestID: String) throws -> HTTPResponse {
        let known = ["ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"]
        let wanted = Set(head.values(of: "x-amz-object-attributes").flatMap { $0.split(separator: ",") }.map { String($0.trimmingOWS()) })
        guard !wanted.isEmpty else {
            throw S3Error(.invalidArgument, "The x-amz-object-attributes header specifying the attributes to be retrieved is either missing or empty")
        }
        guard wanted.isSubset(of: known) else { throw S3Error(.invalidArgument, "Invalid attribute name specified.") }
        func count(_ name: String) throws -> Int? {
            try head[name].map { text in
                guard let number = Int(text.trimmingOWS()), number >= 0 else { throw S3Error(.invalidArgument, "\(name) must be a non-negative integer.") }
                return number
            }
        }
        let maxParts = min(try count("x-amz-max-parts") ?? 1000, 1000)
        let marker = try count("x-amz-part-number-marker") ?? 0
        guard let record = try store.record(for: try Self.blobKey(bucket, key)) else {
            try requireBucket(bucket)
            throw StoreError.notFound
        }
        var xml = XML.declaration + "<GetObjectAttributesResponse xmlns=\"\(XML.namespace)\">"
        if wanted.contains("ETag") { xml += XML.element("ETag", Self.entityTag(record).opaque) }
        if wanted.contains("Checksum") {
            xml += "<Checksum>" + Self.checksumElements(Self.checksumHeaders(record, orSHA256: true)) + "</Checksum>"
        }
        if wanted.contains("ObjectParts"), let count = record.parts {
            xml += "<ObjectParts>" + XML.element("PartsCount", String(count))
            if let sizes = record.partSizes {
                let after = sizes.enumerated().dropFirst(marker)
                let page = after.prefix(maxParts)
                xml += XML.element("PartNumberMarker", String(marker)) + XML.element("MaxParts", String(maxParts))
                    + XML.element("IsTruncated", after.count > page.count ? "true" : "false")
                if let last = page.last, after.count > page.count { xml += XML.element("NextPartNumberMarker", String(last.offset + 1)) }
                let algorithm = ChecksumAlgorithm.split(record.checksum)?.algorithm
                for (index, size) in page {
                    xml += "<Part>"
                    if let algorithm, let checksums = record.partChecksums, index < checksums.count {
                        xml += XML.element(algorithm.element, checksums[index])
                    }
                    xml += XML.element("PartNumber", String(index + 1)) + XML.element("Size", String(size)) + "</Part>"
                }
            }
            xml += "</ObjectParts>"
        }
        if wanted.contains("StorageClass") { xml += XML.element("StorageClass", "STANDARD") }
        if wanted.contains("ObjectSize") { xml += XML.element("ObjectSize", String(record.size)) }
        var response = xmlResponse(xml + "</GetObjectAttributesResponse>", requestID: requestID)
        response.headers.append(("Last-Modified", HTTPDate.format(record.modified)))
        return response
    }

    /// The entity tag S3 clients see: the content's MD5 when the upload computed it (an S3
    /// single-part upload), else the SHA-256's 64 hex digits, which no client mistakes for an
    /// MD5 (a /v1 or tus upload). /v1 keeps its own version ETags.
    static func entityTag(_ record: BlobRecord) -> EntityTag {
        EntityTag(opaque: WriteCondition.TagScheme.content.tag(of: record))
    }

    /// The quoted ETag.
    static func etag(_ record: BlobRecord) -> String {
        entityTag(record).headerValue
    }
}

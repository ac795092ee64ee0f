import HTTPCore
import BlobStore
import MicroHTTPD

#if canImport(Glibc)
import Glibc
import Access
#endif

extension S3Service {
    /// CopyObject (`PUT` with `x-amz-copy-source`): COPY keeps the source's attributes, REPLACE
    /// takes the request's; a self-copy needs REPLACE. `x-amz-copy-source-if-*` are checked
    /// against the source, `If-Match` / `If-None-Match` against the destination at the commit.
    /// A copy of a named version (`?versionId=`) onto its own key is not a copy to itself: it
    /// restores that version, as S3 does.
    /// The bytes are copied into a new file on the commit pool, inside the kernel where the file
    /// system allows (copy_file_range), and committed atomically like a PUT. The copy keeps the
    /// source's checksum, unless `x-amz-checksum-algorithm` asks for one: then the bytes pass
    /// through user space, and the copy gets that full-object checksum. `x-amz-object-lock-*`
    /// lock the new version as on PutObject.
    func copyObject(_ head: HTTPRequestHead, bucket: String, key: String, caller: Principal,
                    requestID: String) throws -> HTTPRequestAction {
        let destination = try blobKey(bucket, key)
        let (sourceBucket, sourceKey) = try Self.copySource(head["x-amz-copy-source"] ?? "")
        try checkCopySourceRead(caller, source: try Self.blobKey(sourceBucket, sourceKey))
        let source = try blobKey(sourceBucket, sourceKey)
        let directive = (head["x-amz-metadata-directive"] ?? "COPY").uppercased()
        guard directive == "COPY" || directive == "REPLACE" else {
            throw S3Error(.invalidArgument, "Unknown metadata directive.")
        }
        let sourceVersion = try Self.copySourceVersion(head["x-amz-copy-source"] ?? "")
        if source == destination && directive == "COPY" && sourceVersion == nil {
            throw S3Error(.invalidRequest, "This copy request is illegal because it is trying to copy an object to itself "
                          + "without changing the object's metadata, storage class, website redirect location or encryption attributes.")
        }
        let algorithm = try head["x-amz-checksum-algorithm"].map { try ChecksumAlgorithm(header: "x-amz-checksum-algorithm", $0) }
        let blob = try openCopySource(head, source, version: sourceVersion)
        let attributes = directive == "REPLACE" ? try Self.attributes(head, key: key) : blob.record.attributes
        var condition = Preconditions(head, acceptingUnquotedTags: true).writeCondition(.content)
        condition.onlyCreate = caller.write(destination) == .createOnly
        condition.versioning = versioning(of: destination)
        // The new version's own lock (S3 does not copy the source's).
        condition.newLock = try requestedLock(head, bucket: bucket, key: destination, caller: caller)
        let digests = algorithm.map { BodyDigests(checksum: $0, size: blob.record.size, md5: false) }
        let stream = try store.beginWrite(expectedSize: blob.record.size, expectedSHA256: blob.record.sha256, hasher: digests?.hasher)
        // The copy runs on the commit pool once the (empty) body is in; a dropped connection
        // drops the stream, which removes its file.
        return .receive(BufferedBody(limit: 0, committers: committers) { [self] _ in
            do {
                let descriptor = try blob.takeDescriptor()
                defer { descriptor.close() }
                var checksum = blob.record.checksum
                var partChecksums = blob.record.partChecksums
                if let digests, let algorithm = digests.algorithm {
                    try stream.write(contentsOf: descriptor, count: blob.record.size)
                    guard let value = digests.values(try stream.digests()).checksum else {
                        throw StoreError.io(operation: "checksum", errno: EINVAL)
                    }
                    (checksum, partChecksums) = ("\(algorithm.rawValue):\(value)", nil)
                } else {
                    try stream.copy(contentsOf: descriptor, count: blob.record.size, sha256: blob.record.sha256)
                }
                let stored = try stream.commit(as: destination, attributes: attributes, md5: blob.record.md5, parts: blob.record.parts,
                                               partSizes: blob.record.partSizes, partChecksums: partChecksums, checksum: checksum,
                                               if: condition, events: events("ObjectCreated:Copy", destination, head, requestID))
                var response = xmlResponse(XML.declaration + "<CopyObjectResult xmlns=\"\(XML.namespace)\">"
                    + XML.element("LastModified", Self.isoDate(stored.record.modified))
                    + XML.element("ETag", Self.etag(stored.record))
                    + Self.checksumElements(Self.checksumHeaders(checksum: stored.record.checksum)) + "</CopyObjectResult>",
                                   requestID: requestID)
                response.headers += Self.versionHeaders(stored.record, condition.versioning)
                response.headers += copySourceVersionHeaders(blob.record, source)
                return response
            } catch {
                stream.abandon()
                return failure(S3Error(error), head: head, requestID: requestID)
            }
        })
    }

    /// UploadPartCopy (`PUT /BUCKET/KEY?partNumber=N&uploadId=ID` with `x-amz-copy-source`
    /// and optionally `x-amz-copy-source-range: bytes=FIRST-LAST`): the source's bytes, or
    /// that range of them, become the part. They pass through user space, since the part's
    /// MD5 (its ETag) has to be computed.
    func copyPart(_ head: HTTPRequestHead, upload: MultipartUpload, number: Int, caller: Principal,
                  requestID: String) throws -> HTTPRequestAction {
        let (sourceBucket, sourceKey) = try Self.copySource(head["x-amz-copy-source"] ?? "")
        try checkCopySourceRead(caller, source: try Self.blobKey(sourceBucket, sourceKey))
        let source = try blobKey(sourceBucket, sourceKey)
        let blob = try openCopySource(head, source, version: try Self.copySourceVersion(head["x-amz-copy-source"] ?? ""))
        var range = ByteRange(start: 0, end: blob.record.size == 0 ? 0 : blob.record.size - 1)
        var length = blob.record.size
        if let text = head["x-amz-copy-source-range"] {
            guard let specs = ByteRangeSpec.parseHeader(text), specs.count == 1, case .from(let first, let last?) = specs[0],
                  last >= first else {
                throw S3Error(.invalidArgument, "The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy")
            }
            guard last < blob.record.size else {
                throw S3Error(.invalidRange, "The requested range is not satisfiable")
            }
            range = ByteRange(start: first, end: last)
            length = last - first + 1
        }
        // In an upload with a checksum, the part gets one like an uploaded part.
        let algorithm = MultipartChecksum(stored: upload.checksum)?.algorithm
        let digests = BodyDigests(checksum: algorithm, size: length)
        let part = try store.beginPart(of: upload, number: number, expectedSize: length, expectedSHA256: nil, hasher: digests.hasher)
        return .receive(BufferedBody(limit: 0, committers: committers) { [self] _ in
            do {
                let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 4096)
                defer { buffer.deallocate() }
                var offset = range.start
                while offset < range.start + length {
                    let wanted = Int(min(UInt64(buffer.count), range.start + length - offset))
                    let read = try blob.read(at: offset, into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<wanted]))
                    guard read > 0 else { throw StoreError.io(operation: "read", errno: EIO) }
                    try part.write(UnsafeRawBufferPointer(rebasing: buffer[..<read]))
                    offset += UInt64(read)
                }
                let (md5, checksum) = digests.values(try part.digests())
                let saved = try part.finish(md5: md5, checksum: checksum)
                var xml = XML.declaration + "<CopyPartResult xmlns=\"\(XML.namespace)\">"
                    + XML.element("LastModified", Self.isoDate(saved.modified)) + XML.element("ETag", "\"\(hex(saved.md5))\"")
                if let algorithm, let value = saved.checksum {
                    xml += XML.element(algorithm.element, value)
                }
                var response = xmlResponse(xml + "</CopyPartResult>", requestID: requestID)
                response.headers += copySourceVersionHeaders(blob.record, source)
                return response
            } catch {
                part.abandon()
                return failure(S3Error(error), head: head, requestID: requestID)
            }
        })
    }

    /// Opens a copy's source and checks `x-amz-copy-source-if-*` against it, as the standard
    /// conditions would be on a GET of it.
    func openCopySource(_ head: HTTPRequestHead, _ source: BlobKey, version: String? = nil) throws -> OpenBlob {
        let blob: OpenBlob
        if let version {
            guard let found = try store.version(source, id: version) else { throw S3Error(.noSuchVersion, "The specified version does not exist.") }
            // A delete marker cannot be copied (S3: InvalidRequest).
            guard !found.deleteMarker else { throw S3Error(.invalidRequest, "The source of a copy request may not specifically refer to a delete marker by version id.") }
            blob = try store.open(version: found)
        } else {
            blob = try store.open(source)
        }
        let renamed: [(name: String, value: String)] = [
            ("x-amz-copy-source-if-match", "If-Match"), ("x-amz-copy-source-if-none-match", "If-None-Match"),
            ("x-amz-copy-source-if-modified-since", "If-Modified-Since"),
            ("x-amz-copy-source-if-unmodified-since", "If-Unmodified-Since"),
        ].compactMap { from, to in head[from].map { (to, $0) } }
        let conditions = Preconditions(HTTPRequestHead(method: "GET", path: [], headers: renamed), acceptingUnquotedTags: true)
        guard conditions.evaluate(current: blob.record, safe: true, entityTag: Self.entityTag) == .proceed else {
            throw S3Error(.preconditionFailed, "At least one of the pre-conditions you specified did not hold.")
        }
        return blob
    }

    /// `x-amz-copy-source-version-id`: the version a copy read, named or current, when its
    /// bucket is (or was) versioned; S3 answers it on every copy from such a source.
    func copySourceVersionHeaders(_ record: BlobRecord, _ source: BlobKey) -> [(name: String, value: String)] {
        versioning(of: source) == .unversioned ? [] : [("x-amz-copy-source-version-id", record.versionID)]
    }

    /// The version `x-amz-copy-source` names (`?versionId=ID`), nil when none.
    static func copySourceVersion(_ header: String) throws(S3Error) -> String? {
        guard let mark = header.firstIndex(of: "?") else { return nil }
        let query = header[header.index(after: mark)...]
        if query.isEmpty { return nil }
        guard query.hasPrefix("versionId=") else { throw S3Error(.invalidArgument, "x-amz-copy-source takes only ?versionId=.") }
        let id = String(query.dropFirst("versionId=".count))
        try checkVersionID(id)
        return id
    }

    /// `x-amz-copy-source`: `[/]BUCKET/KEY[?versionId=…]`, percent-encoded.
    static func copySource(_ header: String) throws(S3Error) -> (bucket: String, key: String) {
        var text = Substring(header)
        if let mark = text.firstIndex(of: "?") {
            _ = try copySourceVersion(header)
            text = text[..<mark]
        }
        if text.first == "/" { text = text.dropFirst() }
        guard let decoded = PercentEncoding.decode(Array(text.utf8)), let path = String(validating: decoded, as: UTF8.self),
              let slash = path.firstIndex(of: "/"), slash != path.startIndex, path.index(after: slash) != path.endIndex else {
            throw S3Error(.invalidArgument, "x-amz-copy-source must be BUCKET/KEY, percent-encoded.")
        }
        return (String(path[..<slash]), String(path[path.index(after: slash)...]))
    }
}

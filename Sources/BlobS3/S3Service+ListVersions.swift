import BlobStore
import HTTPCore
import MicroHTTPD

/// ListObjectVersions (`GET /BUCKET?versions`): every version and delete marker, key by key,
/// newest first, paged by key-marker and version-id-marker, rolled up by a delimiter. In a
/// bucket never versioned every object is its one `null` version.
extension S3Service {
    /// One page of versions and common prefixes, and where the next page starts.
    struct VersionListing {
        var entries: [BlobVersion] = []
        var commonPrefixes: [String] = []
        var truncated = false
        var next: (key: String, versionID: String?)?
    }

    func listVersions(_ bucket: String, _ request: ListRequest, requestID: String) throws -> HTTPResponse {
        let versionMarker = request.value("version-id-marker").flatMap { $0.isEmpty ? nil : $0 }
        if let versionMarker {
            guard request.after != nil else {
                throw S3Error(.invalidArgument, "A version-id marker cannot be specified without a key marker.")
            }
            try Self.checkVersionID(versionMarker)
        }
        let listing = try scanVersions(bucket, request, versionMarker: versionMarker)
        return xmlResponse(Self.versionsXML(bucket, request, listing), requestID: requestID)
    }

    private func scanVersions(_ bucket: String, _ request: ListRequest, versionMarker: String?) throws -> VersionListing {
        let (prefix, delimiter, maxKeys) = (request.prefix, request.delimiter, request.maxKeys)
        let bucketPrefix = Array((bucket + "/").utf8)
        var cursor: VersionCursor? = request.after.map { after in
            var bytes = bucketPrefix + Array(after.utf8)
            // After a common prefix: past every key under it (UTF-8 never holds 0xFF).
            if versionMarker == nil, let delimiter, after.hasPrefix(prefix), after.hasSuffix(delimiter),
               after.dropFirst(prefix.count).contains(delimiter) {
                bytes.append(0xFF)
            }
            return VersionCursor(key: bytes, versionID: versionMarker)
        }
        var listing = VersionListing()
        var rolling: String?
        scan: while maxKeys > 0 {
            let page = try store.versions(prefix: bucketPrefix + Array(prefix.utf8), after: cursor, limit: 1000)
            for version in page {
                let objectKey = String(version.record.key.rawValue.dropFirst(bucket.count + 1))
                if let rolling, objectKey.hasPrefix(rolling) { continue }
                if listing.entries.count + listing.commonPrefixes.count == maxKeys {
                    listing.truncated = true
                    break scan
                }
                if let delimiter, let common = Self.commonPrefix(of: objectKey, prefix: prefix, delimiter: delimiter) {
                    listing.commonPrefixes.append(common)
                    listing.next = (common, nil)
                    rolling = common
                } else {
                    listing.entries.append(version)
                    listing.next = (objectKey, version.id)
                }
            }
            guard page.count == 1000, let last = page.last else { break }
            cursor = VersionCursor(key: last.record.key.bytes, versionID: last.id)
            if let rolling, String(last.record.key.rawValue.dropFirst(bucket.count + 1)).hasPrefix(rolling) {
                cursor = VersionCursor(key: bucketPrefix + Array(rolling.utf8) + [0xFF])
            }
        }
        return listing
    }

    private static func versionsXML(_ bucket: String, _ request: ListRequest, _ listing: VersionListing) -> String {
        func encoded(_ text: String) -> String {
            request.urlEncoded ? PercentEncoding.encodeComponent(text.utf8).replacingOccurrences(of: "%2F", with: "/") : text
        }
        var xml = XML.declaration + "<ListVersionsResult xmlns=\"\(XML.namespace)\">"
        xml += XML.element("Name", bucket) + XML.element("Prefix", encoded(request.prefix))
            + XML.element("KeyMarker", encoded(request.value("key-marker") ?? ""))
            + XML.element("VersionIdMarker", request.value("version-id-marker") ?? "")
        if listing.truncated, let next = listing.next {
            xml += XML.element("NextKeyMarker", encoded(next.key))
            if let id = next.versionID { xml += XML.element("NextVersionIdMarker", id) }
        }
        xml += XML.element("MaxKeys", String(request.maxKeys))
        if let delimiter = request.delimiter { xml += XML.element("Delimiter", encoded(delimiter)) }
        if request.urlEncoded { xml += XML.element("EncodingType", "url") }
        xml += XML.element("IsTruncated", listing.truncated ? "true" : "false")
        for version in listing.entries {
            let record = version.record
            let head = XML.element("Key", encoded(String(record.key.rawValue.dropFirst(bucket.count + 1))))
                + XML.element("VersionId", version.id) + XML.element("IsLatest", version.latest ? "true" : "false")
                + XML.element("LastModified", Self.isoDate(record.modified))
            if version.deleteMarker {
                xml += "<DeleteMarker>" + head + Self.owner + "</DeleteMarker>"
            } else {
                xml += "<Version>" + head + XML.element("ETag", Self.etag(record)) + XML.element("Size", String(record.size)) + Self.owner
                    + XML.element("StorageClass", "STANDARD") + "</Version>"
            }
        }
        for common in listing.commonPrefixes {
            xml += "<CommonPrefixes>" + XML.element("Prefix", encoded(common)) + "</CommonPrefixes>"
        }
        return xml + "</ListVersionsResult>"
    }
}

import Foundation
import HTTPCore
import BlobStore
import MicroHTTPD

/// ListObjects v1 and v2 over the store's listing.
extension S3Service {

    /// ListObjectsV2 (`list-type=2`) or ListObjects v1: prefix, delimiter (each common prefix
    /// is skipped past, not scanned), max-keys up to 1000, continuation or marker, url encoding.
    func list(_ bucket: String, query: [(name: String, value: [UInt8])], requestID: String) throws -> HTTPResponse {
        let request = try ListRequest(query)
        if request.versions { return try listVersions(bucket, request, requestID: requestID) }
        let listing = try scan(bucket, request)
        return xmlResponse(Self.listXML(bucket, request, listing), requestID: requestID)
    }

    /// What a ListObjects request asks, from its query.
    struct ListRequest {
        let query: [(name: String, value: [UInt8])]
        let v2: Bool
        /// ListObjectVersions: every object is its one version, `null`.
        let versions: Bool
        let prefix: String
        let delimiter: String?
        let urlEncoded: Bool
        let maxKeys: Int
        /// Where to start, as an object key (exclusive).
        let after: String?

        init(_ query: [(name: String, value: [UInt8])]) throws {
            func value(_ name: String) -> String? { S3Service.value(name, in: query) }
            self.query = query
            let v2 = value("list-type") == "2"
            self.v2 = v2
            let versions = query.contains { $0.name == "versions" }
            self.versions = versions
            prefix = value("prefix") ?? ""
            delimiter = value("delimiter").flatMap { $0.isEmpty ? nil : $0 }
            urlEncoded = value("encoding-type") == "url"
            if let encoding = value("encoding-type"), encoding != "url" {
                throw S3Error(.invalidArgument, "Invalid Encoding Method specified in Request")
            }
            maxKeys = try S3Service.pageSize("max-keys", value("max-keys"))
            var after: String?
            if v2 {
                if let token = value("continuation-token") {
                    guard let decoded = S3Service.hexBytes(token).flatMap({ String(validating: $0, as: UTF8.self) }) else {
                        throw S3Error(.invalidArgument, "The continuation token provided is incorrect")
                    }
                    after = decoded
                } else if let start = value("start-after") {
                    after = start
                }
            } else {
                after = value(versions ? "key-marker" : "marker")
            }
            self.after = after
        }

        func value(_ name: String) -> String? { S3Service.value(name, in: query) }
    }

    /// One page of a listing: objects and common prefixes, in key order.
    struct Listing {
        var contents: [BlobRecord] = []
        var commonPrefixes: [String] = []
        var truncated = false
        var lastReturned: String?
    }

    /// Reads the store's listing for `request`, rolling keys up into common prefixes.
    private func scan(_ bucket: String, _ request: ListRequest) throws -> Listing {
        let (prefix, delimiter, maxKeys) = (request.prefix, request.delimiter, request.maxKeys)
        let bucketPrefix = Array((bucket + "/").utf8)
        let listed = bucketPrefix + Array(prefix.utf8)
        // Resuming after a common prefix (a marker that holds the delimiter past the prefix and
        // ends with it) skips every key under it: UTF-8 never holds the byte 0xFF.
        var cursor: [UInt8]? = request.after.map { after in
            var bytes = bucketPrefix + Array(after.utf8)
            if let delimiter, after.hasPrefix(prefix), after.hasSuffix(delimiter), after.dropFirst(prefix.count).contains(delimiter) {
                bytes.append(0xFF)
            }
            return bytes
        }
        var listing = Listing()
        // The common prefix being rolled up: keys under it are skipped, within a page by
        // comparison and past its end by moving the cursor, never by reading them all.
        var rolling: String?
        scan: while maxKeys > 0 {
            let page = try store.list(prefix: listed, after: cursor, limit: 1000)
            for record in page {
                let objectKey = String(record.key.rawValue.dropFirst(bucket.count + 1))
                if let rolling, objectKey.hasPrefix(rolling) { continue }
                if listing.contents.count + listing.commonPrefixes.count == maxKeys {
                    listing.truncated = true
                    break scan
                }
                if let delimiter, let common = Self.commonPrefix(of: objectKey, prefix: prefix, delimiter: delimiter) {
                    listing.commonPrefixes.append(common)
                    listing.lastReturned = common
                    rolling = common
                } else {
                    listing.contents.append(record)
                    listing.lastReturned = objectKey
                }
            }
            guard page.count == 1000, let last = page.last else { break }
            cursor = last.key.bytes
            if let rolling, String(last.key.rawValue.dropFirst(bucket.count + 1)).hasPrefix(rolling) {
                cursor = bucketPrefix + Array(rolling.utf8) + [0xFF]
            }
        }
        return listing
    }

    /// The ListBucketResult (or ListVersionsResult) of `listing`.
    private static func listXML(_ bucket: String, _ request: ListRequest, _ listing: Listing) -> String {
        let (prefix, delimiter, urlEncoded, versions, v2) = (request.prefix, request.delimiter, request.urlEncoded, request.versions, request.v2)
        let (contents, commonPrefixes, truncated, lastReturned) = (listing.contents, listing.commonPrefixes, listing.truncated, listing.lastReturned)
        func value(_ name: String) -> String? { request.value(name) }
        func encoded(_ text: String) -> String {
            urlEncoded ? PercentEncoding.encodeComponent(text.utf8).replacingOccurrences(of: "%2F", with: "/") : text
        }
        let root = versions ? "ListVersionsResult" : "ListBucketResult"
        var xml = XML.declaration + "<\(root) xmlns=\"\(XML.namespace)\">"
        xml += XML.element("Name", bucket) + XML.element("Prefix", encoded(prefix))
        if versions {
            xml += XML.element("KeyMarker", encoded(value("key-marker") ?? "")) + XML.element("VersionIdMarker", "")
            if truncated, let lastReturned { xml += XML.element("NextKeyMarker", encoded(lastReturned)) + XML.element("NextVersionIdMarker", "null") }
        } else if v2 {
            if let token = value("continuation-token") { xml += XML.element("ContinuationToken", token) }
            if let start = value("start-after") { xml += XML.element("StartAfter", encoded(start)) }
            xml += XML.element("KeyCount", String(contents.count + commonPrefixes.count))
            if truncated, let lastReturned { xml += XML.element("NextContinuationToken", hex(Array(lastReturned.utf8))) }
        } else {
            xml += XML.element("Marker", encoded(value("marker") ?? ""))
            if truncated, let lastReturned { xml += XML.element("NextMarker", encoded(lastReturned)) }
        }
        xml += XML.element("MaxKeys", String(request.maxKeys))
        if let delimiter { xml += XML.element("Delimiter", encoded(delimiter)) }
        if urlEncoded { xml += XML.element("EncodingType", "url") }
        xml += XML.element("IsTruncated", truncated ? "true" : "false")
        let fetchOwner = !v2 || value("fetch-owner") == "true"
        for record in contents {
            let key = XML.element("Key", encoded(String(record.key.rawValue.dropFirst(bucket.count + 1))))
            let common = XML.element("LastModified", Self.isoDate(record.modified)) + XML.element("ETag", Self.etag(record))
                + XML.element("Size", String(record.size))
            if versions {
                xml += "<Version>" + key + XML.element("VersionId", "null") + XML.element("IsLatest", "true") + common + Self.owner
                    + XML.element("StorageClass", "STANDARD") + "</Version>"
            } else {
                xml += "<Contents>" + key + common + (fetchOwner ? Self.owner : "") + XML.element("StorageClass", "STANDARD") + "</Contents>"
            }
        }
        for common in commonPrefixes {
            xml += "<CommonPrefixes>" + XML.element("Prefix", encoded(common)) + "</CommonPrefixes>"
        }
        xml += "</\(root)>"
        return xml
    }

    /// The common prefix `key` rolls up to: the key up to and including the first `delimiter`
    /// after `prefix` (which it starts with), matched byte for byte as S3 does; nil without one.
    static func commonPrefix(of key: String, prefix: String, delimiter: String) -> String? {
        BlobStore.folder(of: Array(key.utf8), prefix: Array(prefix.utf8), delimiter: Array(delimiter.utf8))
            .map { String(decoding: $0, as: UTF8.self) }
    }
}

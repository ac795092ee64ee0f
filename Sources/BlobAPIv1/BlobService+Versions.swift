import BlobStore
import HTTPCore
import MicroHTTPD

/// Versions through /v1 (issue 25): `GET`, `HEAD` and `DELETE /v1/blobs/K?version=ID`,
/// `GET /v1/blobs/K?versions&limit=N&after=CURSOR`, and the `Blob-Version` header on answers
/// about a blob of a versioned bucket. The id is the one S3 shows as `x-amz-version-id`. An
/// unversioned bucket answers as before.
extension BlobService {
    /// What a blob path's query asks of versions: one version (`version=ID`), or the listing
    /// (`versions`, with `limit` and `after`); nil when neither.
    struct VersionQuery {
        var version: String?
        var listing = false
        var limit: [UInt8]?
        var after: [UInt8]?
    }

    static func versionQuery(_ head: HTTPRequestHead) throws -> VersionQuery? {
        guard let raw = head.query, !raw.isEmpty else { return nil }
        guard let query = PercentEncoding.decodeQuery(raw) else { throw HTTPError.badRequest("The query string has an invalid percent-encoding.") }
        func parameter(_ name: String) -> [UInt8]? { query.first { $0.name == name }?.value }
        var asked = VersionQuery(listing: parameter("versions") != nil, limit: parameter("limit"), after: parameter("after"))
        if let version = parameter("version") {
            let id = String(decoding: version, as: UTF8.self)
            try checkVersionID(id)
            asked.version = id
        }
        return asked.version != nil || asked.listing ? asked : nil
    }

    /// `null`, or the 32 hex digits blobd makes.
    static func checkVersionID(_ id: String) throws(HTTPError) {
        guard id == "null" || (id.utf8.count == 32 && id.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }))
        else { throw .badRequest("A version is null or 32 lowercase hex digits.") }
    }

    /// `Blob-Version` of a version in a bucket that has versioning (none otherwise).
    static func versionHeaders(_ record: BlobRecord, _ versioning: BucketVersioning) -> [(name: String, value: String)] {
        versioning == .unversioned ? [] : [("Blob-Version", record.versionID)]
    }

    /// GET or HEAD of a blob path: a version, the versions, or the blob (naming its version in
    /// a versioned bucket).
    func readBlob(_ head: HTTPRequestHead, key: BlobKey) throws -> HTTPRequestAction {
        if let asked = try Self.versionQuery(head) {
            if asked.listing { return .respond(try listVersions(key, asked)) }
            if let id = asked.version { return .respond(try readVersion(head, key: key, id: id)) }
        }
        return read(head, key: key, versioning: store.versioning(of: key))
    }

    /// GET or HEAD of version `id`: 404 for a delete marker (naming it) or a version that is
    /// not there.
    private func readVersion(_ head: HTTPRequestHead, key: BlobKey, id: String) throws -> HTTPResponse {
        guard let version = try store.version(key, id: id) else { throw StoreError.notFound }
        if version.deleteMarker {
            var response = failure(StoreError.notFound)
            response.headers += [("Blob-Version", id), ("Blob-Delete-Marker", "true")]
            return response
        }
        var response = try read(head, blob: try store.open(version: version), share: nil)
        response.headers.append(("Blob-Version", id))
        return response
    }

    /// `{"versions": [...], "next": CURSOR|null}`: the key's versions, newest first, `limit` a
    /// page (as the listing's), resuming after the version `after`.
    private func listVersions(_ key: BlobKey, _ asked: VersionQuery) throws -> HTTPResponse {
        let limit = try Self.listLimit(asked.limit)
        let after = try asked.after.map { raw in
            let id = String(decoding: raw, as: UTF8.self)
            try Self.checkVersionID(id)
            return VersionCursor(key: key.bytes, versionID: id)
        }
        // The key's versions come first among the keys it is a prefix of (bytewise order).
        let found = try store.versions(prefix: key.bytes, after: after, limit: limit + 1).prefix { $0.record.key == key }
        let page = found.prefix(limit)
        let versions: [JSON] = page.map { version in
            let record = version.record
            return .object([
                ("version", .string(version.id)), ("size", .number(Int64(record.size))),
                ("sha256", version.deleteMarker ? .null : .string(record.sha256Hex)),
                ("etag", version.deleteMarker ? .null : .string(EntityTag(version: record.version).headerValue)),
                ("modified", .string(HTTPDate.formatRFC3339(record.modified))), ("latest", .bool(version.latest)),
                ("delete_marker", .bool(version.deleteMarker)),
            ])
        }
        let next: JSON = found.count > limit ? page.last.map { .string($0.id) } ?? .null : .null
        return Self.jsonResponse(status: 200, .object([("versions", .array(versions)), ("next", next)]))
    }

    /// DELETE of a version (`?version=ID`: that version goes, the newest remaining becomes
    /// current), or in a versioned bucket of the key (a delete marker becomes its latest
    /// version; 404 when it has no current version). Nil: an unversioned delete.
    func deleteVersioned(_ head: HTTPRequestHead, key: BlobKey, if condition: WriteCondition) throws -> HTTPResponse? {
        if let id = try Self.versionQuery(head)?.version {
            let removal = try store.removeVersion(key, id: id, if: condition, events: drafting("ObjectRemoved:Delete", key, head))
            var headers = [Self.noStore, ("Blob-Version", id)]
            if removal.removed?.deleteMarker == true { headers.append(("Blob-Delete-Marker", "true")) }
            return HTTPResponse(status: 204, headers: headers)
        }
        let versioning = store.versioning(of: key)
        guard versioning != .unversioned else { return nil }
        guard try store.record(for: key) != nil else { throw StoreError.notFound }
        var versioned = condition
        versioned.versioning = versioning
        let removal = try store.deleteMarking(key, if: versioned, events: drafting("ObjectRemoved:DeleteMarkerCreated", key, head))
        return HTTPResponse(status: 204, headers: [Self.noStore, ("Blob-Version", removal.marker?.id ?? "null"),
                                                   ("Blob-Delete-Marker", "true")])
    }

    /// The event draft of a delete through /v1 named `name`, if a subscription wants it.
    private func drafting(_ name: String, _ key: BlobKey, _ head: HTTPRequestHead) -> EventDraft? {
        events.draft(name, key: key, head: head, dialect: "v1")
    }
}

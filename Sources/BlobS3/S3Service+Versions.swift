import BlobStore
import HTTPCore
import MicroHTTPD
import Access

/// S3 versioning: PutBucketVersioning and GetBucketVersioning (a bucket setting every node reads
/// from its in-memory directory), deletes that leave delete markers, and removal of one version.
/// An unversioned bucket (one that never had versioning) behaves exactly as before.
extension S3Service {
    /// The versioning of `bucket`, from this node's directory of bucket settings.
    func versioning(of bucket: String) -> BucketVersioning {
        store.settings.versioning(of: bucket[...])
    }

    /// The versioning of the bucket of `key` (its first segment).
    func versioning(of key: BlobKey) -> BucketVersioning {
        let raw = key.rawValue
        return store.settings.versioning(of: raw[..<(raw.firstIndex(of: "/") ?? raw.endIndex)])
    }

    /// `x-amz-version-id` of a version in a bucket that has versioning (none otherwise).
    static func versionHeaders(_ record: BlobRecord, _ versioning: BucketVersioning) -> [(name: String, value: String)] {
        versioning == .unversioned ? [] : [("x-amz-version-id", record.versionID)]
    }

    /// A version id as a client sends it: `null`, or the 32 hex digits blobd makes.
    static func checkVersionID(_ id: String) throws(S3Error) {
        guard id == "null" || (id.utf8.count == 32 && id.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }))
        else { throw S3Error(.invalidArgument, "Invalid version id specified") }
    }

    // MARK: Bucket versioning

    /// PutBucketVersioning: Status Enabled or Suspended; MFA Delete is refused (501).
    func receivePutVersioning(_ head: HTTPRequestHead, bucket: String, requestID: String) throws -> HTTPRequestAction {
        try requireBucket(bucket)
        if head["x-amz-mfa"] != nil { throw S3Error(.notImplemented, "blobd does not support MFA Delete (x-amz-mfa).") }
        let tooLarge = S3Error(.malformedXML, "The VersioningConfiguration is too large.")
        return try receiveSetting(head, bucket: bucket, limit: 64 * 1024, tooLarge: tooLarge, requestID: requestID) { [self] body in
            let root = try XML.parse(body, maxChildren: 8)
            guard root.name == "VersioningConfiguration" else { throw XMLReader.malformed }
            switch root.value("MfaDelete") {
            case nil, "Disabled": break
            case "Enabled": throw S3Error(.notImplemented, "blobd does not support MFA Delete.")
            default: throw XMLReader.malformed
            }
            if let status = root.value("Status") {
                guard status == "Enabled" || status == "Suspended" else { throw XMLReader.malformed }
                if status == "Suspended", objectLock(of: bucket) != nil {
                    throw S3Error(.invalidBucketState, "An Object Lock configuration is present on this bucket, so the versioning state cannot be changed.")
                }
                try setAccess(bucket, .versioning, to: status)
            }
            return HTTPResponse(status: 200, headers: [("x-amz-request-id", requestID)])
        }
    }

    /// GetBucketVersioning: the bucket's status, or none for a bucket never versioned.
    func getVersioning(bucket: String, requestID: String) throws -> HTTPResponse {
        try requireBucket(bucket)
        let status = switch versioning(of: bucket) {
        case .unversioned: ""
        case .enabled: XML.element("Status", "Enabled")
        case .suspended: XML.element("Status", "Suspended")
        }
        return xmlResponse(XML.declaration + "<VersioningConfiguration xmlns=\"\(XML.namespace)\">" + status + "</VersioningConfiguration>",
                           requestID: requestID)
    }

    // MARK: Deletes

    /// What a delete did, for DeleteObject's headers and DeleteObjects' entries.
    struct DeleteOutcome {
        /// The version removed (`?versionId`), or nil for a delete of the key.
        var versionID: String?
        /// A delete marker was made (its id), or removed (the version named).
        var deleteMarker = false
        var markerVersionID: String?
    }

    /// Deletes `key` (or its version `versionID`) under `condition`, as the bucket's
    /// versioning says: unversioned as always; else a delete marker.
    func delete(_ key: BlobKey, versionID: String?, if condition: WriteCondition?, bypassingGovernance: Bool = false,
                drafting events: (String) -> EventDraft?) throws -> DeleteOutcome {
        if let versionID {
            try Self.checkVersionID(versionID)
            do {
                // Object Lock is decided in the removal's transaction; the bypass only says GOVERNANCE may yield.
                var locked = condition ?? .always
                locked.bypassGovernance = bypassingGovernance
                let removal = try store.removeVersion(key, id: versionID, if: locked, events: events("ObjectRemoved:Delete"))
                let marker = removal.removed?.deleteMarker ?? false
                return DeleteOutcome(versionID: versionID, deleteMarker: marker, markerVersionID: marker ? versionID : nil)
            } catch {
                // As in S3: a version that is not there is deleted already.
                guard error == .notFound, condition == nil else { throw error }
                try requireBucket(key)
                return DeleteOutcome(versionID: versionID)
            }
        }
        let versioning = versioning(of: key)
        guard versioning != .unversioned else {
            try deleteObject(key, if: condition, events: events("ObjectRemoved:Delete"))
            return DeleteOutcome()
        }
        var versioned = condition ?? .always
        versioned.versioning = versioning
        let removal = try store.deleteMarking(key, if: versioned, events: events("ObjectRemoved:DeleteMarkerCreated"))
        return DeleteOutcome(deleteMarker: true, markerVersionID: removal.marker?.id)
    }

    /// The bucket of `key` must exist.
    private func requireBucket(_ key: BlobKey) throws {
        let raw = key.rawValue
        try requireBucket(String(raw[..<(raw.firstIndex(of: "/") ?? raw.endIndex)]))
    }

    /// DeleteObject: 204, naming the version removed or the delete marker made.
    func deleteObject(_ head: HTTPRequestHead, bucket: String, key: String, query: [(name: String, value: [UInt8])],
                      caller: Principal, requestID: String) throws -> HTTPResponse {
        let blobKey = try blobKey(bucket, key)
        let bypass = Self.bypassesGovernance(head, bucket: bucket, caller: caller)
        let outcome = try delete(blobKey, versionID: Self.value("versionId", in: query), if: try Self.deleteCondition(head),
                                 bypassingGovernance: bypass) { name in
            events(name, blobKey, head, requestID)
        }
        var headers = [("x-amz-request-id", requestID)]
        if outcome.deleteMarker { headers.append(("x-amz-delete-marker", "true")) }
        if let id = outcome.versionID ?? outcome.markerVersionID { headers.append(("x-amz-version-id", id)) }
        return HTTPResponse(status: 204, headers: headers)
    }

    /// DeleteObjects' `<Deleted>` entry of `outcome`.
    static func deletedXML(_ key: String, _ outcome: DeleteOutcome) -> String {
        var xml = "<Deleted>" + XML.element("Key", key)
        if let id = outcome.versionID { xml += XML.element("VersionId", id) }
        if outcome.deleteMarker { xml += XML.element("DeleteMarker", "true") }
        if let id = outcome.markerVersionID { xml += XML.element("DeleteMarkerVersionId", id) }
        return xml + "</Deleted>"
    }

    // MARK: Reads

    /// GetObject and HeadObject of version `id`: a delete marker is 405 (MethodNotAllowed), as
    /// in S3; a version that is not there NoSuchVersion.
    func readVersion(_ head: HTTPRequestHead, bucket: String, key: String, id: String, query: [(name: String, value: [UInt8])],
                     overrides: [(name: String, value: String)], requestID: String) throws -> HTTPResponse {
        try Self.checkVersionID(id)
        let blobKey = try blobKey(bucket, key)
        guard let version = try store.version(blobKey, id: id) else {
            throw S3Error(.noSuchVersion, "The specified version does not exist.")
        }
        if version.deleteMarker {
            var response = failure(S3Error(.methodNotAllowed, "The specified method is not allowed against this resource."),
                                   head: head, bucket: bucket, key: key, requestID: requestID)
            response.headers += [("x-amz-delete-marker", "true"), ("x-amz-version-id", id),
                                 ("Last-Modified", HTTPDate.format(version.record.modified))]
            return response
        }
        let blob = try store.open(version: version)
        var response = try read(head, blob: blob, query: query, overrides: overrides, requestID: requestID)
        response.headers.append(("x-amz-version-id", id))
        response.headers += Self.lockHeaders(version.record)
        return response
    }

    /// The answer to a plain GetObject or HeadObject of a key whose latest version is a
    /// delete marker: 404 NoSuchKey naming the marker; nil when it is not.
    func deleteMarkerAnswer(_ head: HTTPRequestHead, bucket: String, key: String, requestID: String) -> HTTPResponse? {
        guard versioning(of: bucket) != .unversioned, let blobKey = try? Self.blobKey(bucket, key),
              let newest = try? store.newestNoncurrent(blobKey), newest.deleteMarker else { return nil }
        var response = failure(StoreError.notFound, head: head, bucket: bucket, key: key, requestID: requestID)
        response.headers += [("x-amz-delete-marker", "true"), ("x-amz-version-id", newest.id)]
        return response
    }
}

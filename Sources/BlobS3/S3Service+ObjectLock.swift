import BlobStore
#if canImport(Glibc)
import Glibc
#endif
import HTTPCore
import MicroHTTPD
import Access

/// S3 Object Lock (issue 25): a bucket made with `x-amz-bucket-object-lock-enabled` (versioning
/// on, for good), its configuration and default retention (Put/GetObjectLockConfiguration), and
/// each version's retention and legal hold (Put/GetObjectRetention, Put/GetObjectLegalHold). The
/// catalog decides every removal against the lock inside its transaction, on the server's clock;
/// GOVERNANCE yields only to `x-amz-bypass-governance-retention` from a caller with `admin` on
/// the bucket, COMPLIANCE and legal holds to nobody.
extension S3Service {
    /// The Object Lock configuration of `bucket`; nil without Object Lock.
    func objectLock(of bucket: String) -> ObjectLockConfiguration? {
        store.settings.objectLock(of: bucket[...])
    }

    /// True when the request names `x-amz-bypass-governance-retention: true` and the caller has
    /// `admin` on the bucket. From another caller the header counts only where it would bypass
    /// a lock: it bypasses nothing, so a version under GOVERNANCE answers AccessDenied (the
    /// lock's refusal) and one under no lock goes as without it. Tools that always send it
    /// (the s3-tests cleanup) can then delete what is not locked, as MinIO lets them.
    static func bypassesGovernance(_ head: HTTPRequestHead, bucket: String, caller: Principal) -> Bool {
        guard let value = head["x-amz-bypass-governance-retention"], value.trimmingOWS().lowercased() == "true" else { return false }
        return caller.grants.allows(.admin, wholeBucket: bucket)
    }

    /// The lock a write's (PutObject, CopyObject, CreateMultipartUpload) `x-amz-object-lock-mode`
    /// and `-retain-until-date` (together, a date to come) and `-legal-hold` (ON or OFF) ask for;
    /// nil when it names none. The bucket must have Object Lock, and the caller `admin` on the
    /// key, as PutObjectRetention needs.
    func requestedLock(_ head: HTTPRequestHead, bucket: String, key: BlobKey, caller: Principal) throws -> ObjectLock? {
        let names = ["x-amz-object-lock-mode", "x-amz-object-lock-retain-until-date", "x-amz-object-lock-legal-hold"]
        guard names.contains(where: { head[$0] != nil }) else { return nil }
        for name in names where head.values(of: name).count > 1 { throw S3Error(.invalidArgument, "\(name) may be given once.") }
        try requireObjectLock(bucket)
        guard caller.grants.allows(.admin, key: key.rawValue.utf8) else {
            throw S3Error(.accessDenied, "Access Denied: locking a version needs admin on its key.")
        }
        var lock = ObjectLock()
        switch (head["x-amz-object-lock-mode"], head["x-amz-object-lock-retain-until-date"]) {
        case (nil, nil): break
        case (let mode?, let date?):
            guard let mode = ObjectLock.Mode(rawValue: String(mode.trimmingOWS())), let until = Self.iso8601Seconds(String(date.trimmingOWS()))
            else { throw S3Error(.invalidArgument, "Unknown wormMode directive, or a retain until date that is not an ISO 8601 time.") }
            guard until > store.now() else { throw S3Error(.invalidArgument, "The retain until date must be in the future!") }
            (lock.mode, lock.retainUntil) = (mode, until)
        default:
            throw S3Error(.invalidArgument, "x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both be supplied")
        }
        switch head["x-amz-object-lock-legal-hold"].map({ String($0.trimmingOWS()) }) {
        case nil, "OFF": break
        case "ON": lock.legalHold = true
        default: throw S3Error(.invalidArgument, "Legal Hold must be either of 'ON' or 'OFF'")
        }
        return lock
    }

    /// A version's lock as GetObject and HeadObject name it: the retention's mode and date,
    /// and the legal hold when on.
    static func lockHeaders(_ record: BlobRecord) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = []
        if let mode = record.lock.mode, let until = record.lock.retainUntil {
            headers += [("x-amz-object-lock-mode", mode.rawValue), ("x-amz-object-lock-retain-until-date", isoDate(until))]
        }
        if record.lock.legalHold { headers.append(("x-amz-object-lock-legal-hold", "ON")) }
        return headers
    }

    /// The bucket must have Object Lock, as S3 requires for retention and legal holds.
    private func requireObjectLock(_ bucket: String) throws {
        try requireBucket(bucket)
        guard objectLock(of: bucket) != nil else { throw S3Error(.invalidRequest, "Bucket is missing Object Lock Configuration") }
    }

    // MARK: The bucket's configuration

    /// PutObjectLockConfiguration: ObjectLockEnabled Enabled, and an optional default retention
    /// (Mode and Days or Years). A bucket without Object Lock gets it only if its versioning is
    /// enabled, as in S3.
    func receivePutObjectLock(_ head: HTTPRequestHead, bucket: String, requestID: String) throws -> HTTPRequestAction {
        try requireBucket(bucket)
        let tooLarge = S3Error(.malformedXML, "The ObjectLockConfiguration is too large.")
        return try receiveSetting(head, bucket: bucket, limit: 64 * 1024, tooLarge: tooLarge, requestID: requestID) { [self] body in
            let root = try XML.parse(body, maxChildren: 4)
            guard root.name == "ObjectLockConfiguration", root.value("ObjectLockEnabled") == "Enabled" else { throw XMLReader.malformed }
            var configuration = ObjectLockConfiguration()
            if let rule = root.children.first(where: { $0.name == "Rule" }) {
                guard let retention = rule.children.first(where: { $0.name == "DefaultRetention" }),
                      let mode = retention.value("Mode").flatMap(ObjectLock.Mode.init(rawValue:)) else { throw XMLReader.malformed }
                let days = retention.value("Days").flatMap { Int($0) }, years = retention.value("Years").flatMap { Int($0) }
                guard (days == nil) != (years == nil), (1...36_500).contains(days ?? years ?? 0), (years ?? 1) <= 100 else {
                    throw S3Error(.invalidArgument, "A default retention names a positive Days or Years, not both.")
                }
                configuration = ObjectLockConfiguration(defaultMode: mode, days: days, years: years)
            }
            guard objectLock(of: bucket) != nil || versioning(of: bucket) == .enabled else {
                throw S3Error(.invalidBucketState, "Versioning must be 'Enabled' on the bucket to apply a Object Lock configuration")
            }
            try setAccess(bucket, .objectLock, to: configuration.stored)
            return HTTPResponse(status: 200, headers: [("x-amz-request-id", requestID)])
        }
    }

    /// GetObjectLockConfiguration.
    func getObjectLock(bucket: String, requestID: String) throws -> HTTPResponse {
        try requireBucket(bucket)
        guard let configuration = objectLock(of: bucket) else {
            throw S3Error(.objectLockConfigurationNotFound, "Object Lock configuration does not exist for this bucket")
        }
        var rule = ""
        if let mode = configuration.defaultMode {
            let period = configuration.years.map { XML.element("Years", String($0)) } ?? XML.element("Days", String(configuration.days ?? 0))
            rule = "<Rule><DefaultRetention>" + XML.element("Mode", mode.rawValue) + period + "</DefaultRetention></Rule>"
        }
        return xmlResponse(XML.declaration + "<ObjectLockConfiguration xmlns=\"\(XML.namespace)\">"
                           + XML.element("ObjectLockEnabled", "Enabled") + rule + "</ObjectLockConfiguration>", requestID: requestID)
    }

    // MARK: A version's retention and legal hold

    /// PutObjectRetention (`?retention`, with an optional `versionId`): Mode and RetainUntilDate;
    /// shortening or removing a retention in force needs the governance bypass (GOVERNANCE) or
    /// is refused (COMPLIANCE).
    func receivePutRetention(_ head: HTTPRequestHead, bucket: String, key: String, query: [(name: String, value: [UInt8])],
                             caller: Principal, requestID: String) throws -> HTTPRequestAction {
        try requireObjectLock(bucket)
        let blobKey = try blobKey(bucket, key)
        let id = Self.value("versionId", in: query)
        if let id { try Self.checkVersionID(id) }
        let bypass = Self.bypassesGovernance(head, bucket: bucket, caller: caller)
        let tooLarge = S3Error(.malformedXML, "The Retention is too large.")
        return try receiveSetting(head, bucket: bucket, limit: 64 * 1024, tooLarge: tooLarge, requestID: requestID) { [self] body in
            let root = try XML.parse(body, maxChildren: 4)
            guard root.name == "Retention" else { throw XMLReader.malformed }
            var retention = ObjectLock.unlocked
            if let modeText = root.value("Mode") {
                guard let mode = ObjectLock.Mode(rawValue: modeText), let dateText = root.value("RetainUntilDate"),
                      let until = Self.iso8601Seconds(dateText) else { throw XMLReader.malformed }
                guard until > store.now() else { throw S3Error(.invalidArgument, "The retain until date must be in the future!") }
                retention = ObjectLock(mode: mode, retainUntil: until)
            }
            let version = try store.setLock(blobKey, id: id, retention: retention, bypassGovernance: bypass)
            return HTTPResponse(status: 200, headers: [("x-amz-request-id", requestID)] + Self.versionHeaders(version.record, .enabled))
        }
    }

    /// GetObjectRetention: the version's retention, or NoSuchObjectLockConfiguration.
    func getRetention(bucket: String, key: String, query: [(name: String, value: [UInt8])], requestID: String) throws -> HTTPResponse {
        let lock = try lock(bucket: bucket, key: key, query: query)
        guard let mode = lock.mode, let until = lock.retainUntil else {
            throw S3Error(.noSuchObjectLockConfiguration, "The specified object does not have a ObjectLock configuration")
        }
        return xmlResponse(XML.declaration + "<Retention xmlns=\"\(XML.namespace)\">" + XML.element("Mode", mode.rawValue)
                           + XML.element("RetainUntilDate", Self.isoDate(until)) + "</Retention>", requestID: requestID)
    }

    /// PutObjectLegalHold: Status ON or OFF.
    func receivePutLegalHold(_ head: HTTPRequestHead, bucket: String, key: String, query: [(name: String, value: [UInt8])],
                             requestID: String) throws -> HTTPRequestAction {
        try requireObjectLock(bucket)
        let blobKey = try blobKey(bucket, key)
        let id = Self.value("versionId", in: query)
        if let id { try Self.checkVersionID(id) }
        let tooLarge = S3Error(.malformedXML, "The LegalHold is too large.")
        return try receiveSetting(head, bucket: bucket, limit: 64 * 1024, tooLarge: tooLarge, requestID: requestID) { [self] body in
            let root = try XML.parse(body, maxChildren: 2)
            guard root.name == "LegalHold", let status = root.value("Status"), status == "ON" || status == "OFF" else {
                throw XMLReader.malformed
            }
            let version = try store.setLock(blobKey, id: id, legalHold: status == "ON")
            return HTTPResponse(status: 200, headers: [("x-amz-request-id", requestID)] + Self.versionHeaders(version.record, .enabled))
        }
    }

    /// GetObjectLegalHold.
    func getLegalHold(bucket: String, key: String, query: [(name: String, value: [UInt8])], requestID: String) throws -> HTTPResponse {
        let lock = try lock(bucket: bucket, key: key, query: query)
        return xmlResponse(XML.declaration + "<LegalHold xmlns=\"\(XML.namespace)\">" + XML.element("Status", lock.legalHold ? "ON" : "OFF")
                           + "</LegalHold>", requestID: requestID)
    }

    /// The lock of the version a Get names (the current one without `versionId`).
    private func lock(bucket: String, key: String, query: [(name: String, value: [UInt8])]) throws -> ObjectLock {
        try requireObjectLock(bucket)
        let blobKey = try blobKey(bucket, key)
        if let id = Self.value("versionId", in: query) {
            try Self.checkVersionID(id)
            guard let version = try store.version(blobKey, id: id), !version.deleteMarker else {
                throw S3Error(.noSuchVersion, "The specified version does not exist.")
            }
            return version.record.lock
        }
        guard let record = try store.record(for: blobKey) else { throw StoreError.notFound }
        return record.lock
    }
}

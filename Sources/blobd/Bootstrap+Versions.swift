import BlobS3
import BlobStore
import Foundation
import HTTPCore

/// A bootstrap bucket's `"versioning": "Enabled" | "Suspended"` and `"object_lock": true` (or
/// `{"default_retention": {"mode": "GOVERNANCE" | "COMPLIANCE", "days": N | "years": N}}`), kept
/// as the settings S3's PutBucketVersioning and CreateBucket with Object Lock (and
/// PutObjectLockConfiguration) keep. Object Lock turns versioning on for good: with it,
/// `"versioning"` may only be `"Enabled"`.
extension Bootstrap {
    /// The members of a bucket entry this extension reads.
    static let versionMembers: Set<String> = ["versioning", "object_lock"]

    /// The versioning and Object Lock settings a bucket entry asks for (none when it names neither).
    static func versionSettings(_ object: [String: Any], bucket name: String) throws(Invalid) -> [BucketAccessSetting] {
        let versioning = try versioningStatus(object["versioning"], bucket: name)
        guard let lockValue = object["object_lock"] else {
            return versioning.map { [BucketAccessSetting(bucket: name, name: .versioning, value: $0)] } ?? []
        }
        let lock = try objectLock(lockValue, bucket: name)
        guard versioning == nil || versioning == "Enabled" else {
            throw Invalid(description: "bucket '\(name)': a bucket with object_lock keeps versioning Enabled; it cannot be \"Suspended\"")
        }
        return BucketAccessSetting.objectLock(name, lock)
    }

    /// `"Enabled"` or `"Suspended"`; nil when absent.
    private static func versioningStatus(_ value: Any?, bucket name: String) throws(Invalid) -> String? {
        guard let value else { return nil }
        guard let status = value as? String, status == "Enabled" || status == "Suspended" else {
            throw Invalid(description: "bucket '\(name)': versioning is \"Enabled\" or \"Suspended\"")
        }
        return status
    }

    /// `true`, or an object with an optional `default_retention`.
    private static func objectLock(_ value: Any, bucket name: String) throws(Invalid) -> ObjectLockConfiguration {
        // A JSON true or false is an NSNumber of type "c"; 1 is not true here.
        if let flag = value as? NSNumber, String(cString: flag.objCType) == "c" {
            guard flag.boolValue else {
                throw Invalid(description: "bucket '\(name)': object_lock cannot be false (Object Lock is never turned off); leave it out")
            }
            return ObjectLockConfiguration()
        }
        guard let object = value as? [String: Any] else {
            throw Invalid(description: "bucket '\(name)': object_lock is true or {\"default_retention\": {...}}")
        }
        if let unknown = object.keys.sorted().first(where: { $0 != "default_retention" }) {
            throw Invalid(description: "bucket '\(name)': object_lock: unknown member '\(unknown)' (blobd knows default_retention)")
        }
        guard let retention = object["default_retention"] else { return ObjectLockConfiguration() }
        return try defaultRetention(retention, bucket: name)
    }

    /// `{"mode": "GOVERNANCE" | "COMPLIANCE", "days": N}` or with `"years": N` instead, as S3's
    /// DefaultRetention (1 to 36,500 days, or 1 to 100 years).
    private static func defaultRetention(_ value: Any, bucket name: String) throws(Invalid) -> ObjectLockConfiguration {
        let what = "bucket '\(name)': object_lock: default_retention"
        guard let retention = value as? [String: Any] else {
            throw Invalid(description: "\(what) is {\"mode\": \"GOVERNANCE\" or \"COMPLIANCE\", \"days\" or \"years\": N}")
        }
        if let unknown = retention.keys.sorted().first(where: { !["mode", "days", "years"].contains($0) }) {
            throw Invalid(description: "\(what): unknown member '\(unknown)' (blobd knows mode, days and years)")
        }
        guard let mode = (retention["mode"] as? String).flatMap(ObjectLock.Mode.init(rawValue:)) else {
            throw Invalid(description: "\(what): mode is \"GOVERNANCE\" or \"COMPLIANCE\"")
        }
        let days = try count(retention["days"], "days", upTo: 36_500, what)
        let years = try count(retention["years"], "years", upTo: 100, what)
        guard (days == nil) != (years == nil) else { throw Invalid(description: "\(what) names days or years, one of them") }
        return ObjectLockConfiguration(defaultMode: mode, days: days, years: years)
    }

    /// A whole number from 1 to `limit`; nil when absent.
    private static func count(_ value: Any?, _ member: String, upTo limit: Int, _ what: String) throws(Invalid) -> Int? {
        guard let value else { return nil }
        guard let number = value as? NSNumber, String(cString: number.objCType) != "c",
              let count = Int(exactly: number.doubleValue), (1...limit).contains(count) else {
            throw Invalid(description: "\(what): \(member) is a whole number from 1 to \(limit)")
        }
        return count
    }

    /// Refuses a plan that would suspend the versioning of a bucket that has Object Lock in the
    /// catalog already (made so through S3, or by an earlier file).
    static func checkVersioning(_ plan: BootstrapPlan, stored: [BucketAccessSetting]) throws(Invalid) {
        let locked = Set(stored.filter { $0.name == .objectLock }.map(\.bucket))
        for setting in plan.settings where setting.name == .versioning && setting.value == "Suspended" && locked.contains(setting.bucket) {
            throw Invalid(description: "bucket '\(setting.bucket)' has Object Lock, which keeps versioning Enabled; it cannot be \"Suspended\"")
        }
    }
}

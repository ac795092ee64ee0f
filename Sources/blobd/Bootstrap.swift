import BlobS3
import BlobStore
import Foundation
import HTTPCore
import Access

/// `--bootstrap FILE`: buckets, keys with the secrets the file gives, and anonymous grants,
/// applied at every start before blobd listens, in one transaction; applying the same file
/// again changes nothing. Its shape mirrors the admin API:
/// `{"buckets": [{"name": B, "cors": ..., "lifecycle": ..., "notifications": ..., "versioning":
/// ..., "object_lock": ...}], "keys": [{"name", "grants": [...], "token", "access_key_id",
/// "secret_access_key"}], "anonymous": [GRANT, ...]}`; a bucket's settings are in the JSON of
/// their admin API (versioning and Object Lock: `Bootstrap+Versions.swift`). A bad file stops
/// blobd with exit 2, as the API contract says (every other bad setting exits 64, EX_USAGE).
enum Bootstrap {
    /// Why a bootstrap file was refused.
    struct Invalid: Error, CustomStringConvertible {
        let description: String
    }

    /// Checks the JSON of one bucket setting and gives the text the catalog keeps, or throws a
    /// message saying what is wrong.
    typealias SettingParser = @Sendable (_ json: Any, _ bucket: String) throws -> String

    /// The settings a bucket entry may carry, by member name, each read as its admin API reads it.
    static let settingParsers: [String: (name: BucketAccessSetting.Name, parse: SettingParser)] = [
        "cors": (.cors, { json, _ in try CORSConfiguration(json: json).json.serialized() }),
        "lifecycle": (.lifecycle, { json, _ in
            do throws(LifecycleSettings.Invalid) {
                return LifecycleSettings.json(try LifecycleSettings.rules(fromJSON: json)).serialized()
            } catch {
                throw Invalid(description: error.description)
            }
        }),
        "notifications": (.notifications, { json, _ in
            // The targets are checked against the configuration once it is known (`checkTargets`).
            try NotificationConfiguration(jsonObject: json).validated(targets: nil).json
        }),
    ]

    /// Refuses a plan whose subscriptions name a target that is not configured.
    static func checkTargets(_ plan: BootstrapPlan, targets: Set<String>) throws(Invalid) -> BootstrapPlan {
        for setting in plan.settings where setting.name == .notifications {
            do throws(NotificationConfiguration.Invalid) {
                _ = try NotificationConfiguration(json: Array(setting.value.utf8)).validated(targets: targets)
            } catch {
                guard case .unknownTarget(let name) = error else { throw Invalid(description: "bucket '\(setting.bucket)': notifications: \(error)") }
                throw Invalid(description: "bucket '\(setting.bucket)': notifications: target '\(name)' is not a configured --notify-webhook")
            }
        }
        return plan
    }

    /// Reads and checks the file; nothing is applied yet.
    static func load(_ path: String, now: Int64 = Int64(time(nil))) throws(Invalid) -> BootstrapPlan {
        guard let data = FileManager.default.contents(atPath: path) else { throw Invalid(description: "cannot read \(path)") }
        guard data.count <= 16 << 20 else { throw Invalid(description: "\(path) is larger than 16 MiB") }
        guard let root = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw Invalid(description: "\(path) is not a JSON object")
        }
        if let unknown = root.keys.first(where: { !["buckets", "keys", "anonymous"].contains($0) }) {
            throw Invalid(description: "unknown member '\(unknown)' (blobd knows buckets, keys and anonymous)")
        }
        var buckets: [Bucket] = []
        var settings: [BucketAccessSetting] = []
        for entry in root["buckets"] as? [Any] ?? [] {
            let (bucket, itsSettings) = try bucket(entry, now: now)
            buckets.append(bucket)
            settings += itsSettings
        }
        var names = Set<String>()
        var keys: [KeyRecord] = []
        for entry in root["keys"] as? [Any] ?? [] {
            let key = try key(entry, now: now)
            guard names.insert(key.name).inserted else { throw Invalid(description: "two keys are named '\(key.name)'") }
            keys.append(key)
        }
        let anonymous = try grants(root["anonymous"] ?? [Any](), "anonymous")
        return BootstrapPlan(buckets: buckets, keys: keys, anonymous: anonymous, settings: settings)
    }

    private static func bucket(_ entry: Any, now: Int64) throws(Invalid) -> (Bucket, [BucketAccessSetting]) {
        guard let object = entry as? [String: Any], let name = object["name"] as? String else {
            throw Invalid(description: "each bucket is {\"name\": NAME}")
        }
        guard Bucket.isValidName(name) else { throw Invalid(description: "'\(name)' is not a valid bucket name") }
        var settings = try versionSettings(object, bucket: name)
        for (member, value) in object.sorted(by: { $0.key < $1.key }) where member != "name" && !versionMembers.contains(member) {
            guard let setting = settingParsers[member] else {
                let known = (["name"] + (Array(settingParsers.keys) + versionMembers).sorted()).joined(separator: ", ")
                throw Invalid(description: "bucket '\(name)': unknown member '\(member)' (blobd knows \(known))")
            }
            do {
                settings.append(BucketAccessSetting(bucket: name, name: setting.name, value: try setting.parse(value, name)))
            } catch {
                throw Invalid(description: "bucket '\(name)': \(member): \(error)")
            }
        }
        return (Bucket(name: name, created: now), settings)
    }

    private static func key(_ entry: Any, now: Int64) throws(Invalid) -> KeyRecord {
        guard let object = entry as? [String: Any], let name = object["name"] as? String, !name.isEmpty,
              name.utf8.count <= 200 else {
            throw Invalid(description: "each key has a \"name\" (1 to 200 bytes)")
        }
        if let unknown = object.keys.first(where: { !["name", "grants", "token", "access_key_id", "secret_access_key"].contains($0) }) {
            throw Invalid(description: "key '\(name)': unknown member '\(unknown)'")
        }
        let token = try secret(object["token"], "token", of: name) ?? KeyFactory.token()
        let accessKeyID = try secret(object["access_key_id"], "access_key_id", of: name)
        let secretKey = try secret(object["secret_access_key"], "secret_access_key", of: name)
        guard (accessKeyID == nil) == (secretKey == nil) else {
            throw Invalid(description: "key '\(name)': give access_key_id and secret_access_key together")
        }
        return KeyRecord(id: KeyFactory.bootstrapID(name: name), name: name, grants: try grants(object["grants"], "key '\(name)'"),
                         tokenHash: SHA256Hasher.hash(Array(token.utf8)), accessKeyID: accessKeyID ?? KeyFactory.accessKeyID(),
                         secretAccessKey: secretKey ?? KeyFactory.secret(), created: now, source: .bootstrap)
    }

    /// A secret the file gives: printable ASCII without spaces, 8 to 256 bytes.
    private static func secret(_ value: Any?, _ field: String, of name: String) throws(Invalid) -> String? {
        guard let value else { return nil }
        guard let text = value as? String, (8...256).contains(text.utf8.count),
              text.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw Invalid(description: "key '\(name)': \(field) must be 8 to 256 printable ASCII characters without spaces")
        }
        return text
    }

    private static func grants(_ value: Any?, _ what: String) throws(Invalid) -> Grants {
        guard let texts = value as? [String] else { throw Invalid(description: "\(what): grants are a list of strings") }
        do throws(Grant.ParseError) {
            return try Grants(parsing: texts)
        } catch {
            throw Invalid(description: "\(what): \(error)")
        }
    }
}

import Foundation
import LiveBlobd
import Testing

/// Lifecycle rules over versions (issue 25) seen through blobd run two days ahead under
/// faketime on the same data directory: NoncurrentVersionExpiration removes the noncurrent
/// versions but the one under Object Lock, ExpiredObjectDeleteMarker then removes the delete
/// marker left alone, their files are reclaimed, and each removal's signed
/// `LifecycleExpiration:Delete` event names its version.
@Suite struct VersionLifecycleTests {
    /// The versions /v1 lists of `key` in bucket `vlc`, newest first: (id, delete marker); none
    /// when the key has none left.
    static func versions(_ blobd: BlobdProcess, _ key: String) throws -> [(String, Bool)] {
        let answer = try curl([blobd.baseURL + "/v1/blobs/vlc/\(key)?versions"])
        guard answer.status == 200 else { return [] }
        return (answer.json["versions"] as? [[String: Any]] ?? []).compactMap { entry in
            (entry["version"] as? String).map { ($0, entry["delete_marker"] as? Bool ?? false) }
        }
    }

    /// Phase one, on the real clock: the rules (read back as S3 writes them), three versions of
    /// `a`, a locked version of `locked` under a newer one, and `gone` deleted over its one
    /// version. Prints the version ids as JSON.
    static let setUp = """
        import datetime, json, os, boto3
        s3 = boto3.client("s3", endpoint_url=os.environ["ENDPOINT"], region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s")
        s3.create_bucket(Bucket="vlc", ObjectLockEnabledForBucket=True)
        rules = [{"ID": "noncurrent", "Status": "Enabled", "Filter": {"Prefix": ""}, "NoncurrentVersionExpiration": {"NoncurrentDays": 1}},
                 {"ID": "markers", "Status": "Enabled", "Filter": {"Prefix": ""}, "Expiration": {"ExpiredObjectDeleteMarker": True}}]
        s3.put_bucket_lifecycle_configuration(Bucket="vlc", LifecycleConfiguration={"Rules": rules})
        got = s3.get_bucket_lifecycle_configuration(Bucket="vlc")["Rules"]
        assert got == rules, got
        ids = {"a": [s3.put_object(Bucket="vlc", Key="a", Body=b"a%d" % i)["VersionId"] for i in range(3)]}
        until = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=30)
        ids["locked"] = [s3.put_object(Bucket="vlc", Key="locked", Body=b"kept", ObjectLockMode="COMPLIANCE",
                                       ObjectLockRetainUntilDate=until)["VersionId"],
                         s3.put_object(Bucket="vlc", Key="locked", Body=b"newer")["VersionId"]]
        ids["gone"] = [s3.put_object(Bucket="vlc", Key="gone", Body=b"old")["VersionId"], s3.delete_object(Bucket="vlc", Key="gone")["VersionId"]]
        print(json.dumps(ids))
        """

    @Test func noncurrentVersionsAndMarkersTwoDaysLater() throws {
        let data = TempDir("blobd-faketime")
        let dir = TempDir()
        let library = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
        try #require(FileManager.default.fileExists(atPath: library), "faketime is installed (make test installs it)")
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", port = try freePort(), log = dir.path + "/events.jsonl"
        let receiver = ChildProcess()
        receiver.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        receiver.arguments = ["python3", URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Events/receiver.py").path,
                              String(port), secret, log]
        receiver.environment = ProcessInfo.processInfo.environment.merging(["LD_PRELOAD": library, "FAKETIME": "+2d"]) { $1 }
        receiver.standardError = FileHandle(forWritingAtPath: dir.file("receiver.err", []))
        try receiver.run()
        defer { receiver.stop() }
        let webhook = ["BLOBD_NOTIFY_WEBHOOK_HOOK": "http://127.0.0.1:\(port)/", "BLOBD_NOTIFY_SECRET_HOOK": secret]
        var ids: [String: [String]] = [:]
        do {
            let (blobd, s3) = try LifecycleRuleTests.start(dataDir: data.path + "/data", environment: webhook)
            let result = try run("/usr/bin/env", ["ENDPOINT=" + s3, "python3", "-c", Self.setUp], timeout: 120)
            try #require(result.status == 0, "\(result.stderr)")
            ids = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout)) as? [String: [String]])
            let subscriptions = #"{"subscriptions":[{"id":"expiry","target":"HOOK","events":["s3:LifecycleExpiration:*"]}]}"#
            #expect(try curl(["-X", "PUT", "-H", "Content-Type: application/json", "--data-binary", subscriptions,
                              blobd.baseURL + "/v1/admin/buckets/vlc/notifications"]).status == 200)
            #expect(try Self.versions(blobd, "a").count == 3 && Self.versions(blobd, "gone").count == 2, "nothing due yet")
            #expect(blobd.stop() == 0)
        }
        // Settings from BLOBD_* under libfaketime: see LifecycleRuleTests.twoDaysLaterUnderFaketime.
        let (later, _) = try LifecycleRuleTests.start(dataDir: data.path + "/data", environment: [
            "LD_PRELOAD": library, "FAKETIME": "+2d", "BLOBD_DATA_DIR": data.path + "/data", "BLOBD_LISTEN": "127.0.0.1:0",
            "BLOBD_S3_LISTEN": "127.0.0.1:0",
        ].merging(webhook) { $1 })
        let a = try #require(ids["a"]), locked = try #require(ids["locked"]), gone = try #require(ids["gone"])
        #expect(eventually(within: 15) { (try? Self.versions(later, "gone"))?.isEmpty == true }, "the version, then the marker left alone")
        #expect(try Self.versions(later, "a").map(\.0) == [a[2]], "the noncurrent versions are gone")
        #expect(try Self.versions(later, "locked").map(\.0) == [locked[1], locked[0]], "the locked noncurrent version stays")
        #expect(try curl([later.baseURL + "/v1/blobs/vlc/locked?version=" + locked[0]]).text == "kept")
        #expect(eventually(within: 10) { files(under: data.path + "/data/blobs").count == 3 })
        func delivered() -> [(ok: Bool, name: String, key: String, version: String)] {
            let lines = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
            return lines.compactMap { line in
                guard let entry = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                      let payload = (entry["payload"] as? String).flatMap({ try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }),
                      let record = (payload["Records"] as? [[String: Any]])?.first, let name = record["eventName"] as? String,
                      let object = (record["s3"] as? [String: Any])?["object"] as? [String: Any], let key = object["key"] as? String
                else { return nil }
                return (entry["ok"] as? Bool ?? false, name, key, object["versionId"] as? String ?? "")
            }
        }
        #expect(eventually(within: 15) { delivered().count == 4 }, "\((try? String(contentsOfFile: dir.path + "/receiver.err", encoding: .utf8)) ?? "")")
        let events = delivered()
        #expect(events.allSatisfy { $0.ok && $0.name == "LifecycleExpiration:Delete" }, "\(events)")
        #expect(Set(events.map { "\($0.key) \($0.version)" }) == Set(["a \(a[0])", "a \(a[1])", "gone \(gone[0])", "gone \(gone[1])"]))
    }
}

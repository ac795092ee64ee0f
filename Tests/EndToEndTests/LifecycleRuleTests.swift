import Foundation
import LiveBlobd
import Testing

/// Buckets' lifecycle rules: S3's configuration (boto3 and raw XML) and the /v1 JSON, the
/// `x-amz-expiration` of matching objects, and expiry seen through blobd run days ahead under
/// faketime on the same data directory.
@Suite struct LifecycleRuleTests {
    /// blobd in open access with both listeners; its S3 endpoint.
    static func start(dataDir: String? = nil, environment: [String: String] = [:]) throws -> (BlobdProcess, String) {
        let blobd = try BlobdProcess(["--s3-listen", "127.0.0.1:0"], environment: environment, dataDir: dataDir)
        return (blobd, "http://127.0.0.1:\(try #require(blobd.s3Port, "\(blobd.stderr)"))")
    }

    /// S3's date rule: creation plus `days`, rounded up to the next midnight UTC, as S3 writes it.
    static func expected(modified: String, days: Int, rule: String) throws -> String {
        let created = Int64(try #require(parseHTTPDate(modified)).timeIntervalSince1970)
        let due = created + Int64(days) * 86_400
        let midnight = due % 86_400 == 0 ? due : (due / 86_400 + 1) * 86_400
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return "expiry-date=\"\(formatter.string(from: Date(timeIntervalSince1970: TimeInterval(midnight))))\", rule-id=\"\(rule)\""
    }

    /// A Days rule set by boto3: x-amz-expiration on PutObject, HeadObject and GetObject (boto3's
    /// `Expiration`) and on /v1 GET, HEAD and PUT (curl), exactly; none outside the prefix. The
    /// configuration reads back in XML and as the /v1 JSON.
    @Test func daysRuleAnswersExpiration() throws {
        let (blobd, s3) = try Self.start()
        let result = try run("/usr/bin/env", ["ENDPOINT=" + s3, "python3", "-c", """
            import os, sys, boto3
            s3 = boto3.client("s3", endpoint_url=os.environ["ENDPOINT"], region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s")
            s3.create_bucket(Bucket="logs")
            s3.put_bucket_lifecycle_configuration(Bucket="logs", LifecycleConfiguration={"Rules": [
                {"ID": "logs-30d", "Status": "Enabled", "Filter": {"Prefix": "app/"}, "Expiration": {"Days": 30},
                 "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 7}},
                {"ID": "off", "Status": "Disabled", "Filter": {"Prefix": ""}, "Expiration": {"Days": 1}}]})
            rules = s3.get_bucket_lifecycle_configuration(Bucket="logs")["Rules"]
            assert rules[0] == {"ID": "logs-30d", "Status": "Enabled", "Filter": {"Prefix": "app/"}, "Expiration": {"Days": 30},
                                "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 7}}, rules
            put = s3.put_object(Bucket="logs", Key="app/a.log", Body=b"line")
            head = s3.head_object(Bucket="logs", Key="app/a.log")
            get = s3.get_object(Bucket="logs", Key="app/a.log")
            assert put["Expiration"] == head["Expiration"] == get["Expiration"], (put, head)
            print(head["ResponseMetadata"]["HTTPHeaders"]["last-modified"] + "|" + head["Expiration"])
            other = s3.put_object(Bucket="logs", Key="other/b.log", Body=b"x")
            assert "Expiration" not in other and "Expiration" not in s3.head_object(Bucket="logs", Key="other/b.log")
            """], timeout: 120)
        #expect(result.status == 0, "\(result.stderr)")
        let printed = String(decoding: result.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines).components(separatedBy: "|")
        let header = try Self.expected(modified: try #require(printed.first), days: 30, rule: "logs-30d")
        #expect(printed.last == header)
        #expect(try curl(["-I", blobd.baseURL + "/v1/blobs/logs/app/a.log"]).header("x-amz-expiration") == header)
        #expect(try curl(["-I", s3 + "/logs/app/a.log"]).header("x-amz-expiration") == header)
        #expect(try curl([blobd.baseURL + "/v1/blobs/logs/other/b.log"]).header("x-amz-expiration") == nil)
        let dir = TempDir()
        let put = try curl(["-X", "PUT", "--data-binary", "@" + dir.file("c", [1, 2]), blobd.baseURL + "/v1/blobs/logs/app/c.log"])
        #expect(put.status == 201)
        let modified = try #require(try curl(["-I", blobd.baseURL + "/v1/blobs/logs/app/c.log"]).header("Last-Modified"))
        #expect(put.header("x-amz-expiration") == (try Self.expected(modified: modified, days: 30, rule: "logs-30d")))
        let json = try curl([blobd.baseURL + "/v1/admin/buckets/logs/lifecycle"])
        #expect(json.status == 200)
        #expect(json.text == #"{"rules":[{"id":"logs-30d","status":"Enabled","prefix":"app/","expiration_days":30,"#
                + #""abort_incomplete_multipart_upload_days":7},{"id":"off","status":"Disabled","prefix":"","expiration_days":1}]}"#)
    }

    /// Rules set with a Days of one; blobd started again under faketime two days ahead on the same
    /// data directory: the matching objects are gone from every read and listing, the others
    /// stay, their files are reclaimed, and a webhook receiver (as far ahead) gets their
    /// signed `LifecycleExpiration:Delete` events.
    @Test func twoDaysLaterUnderFaketime() throws {
        let data = TempDir("blobd-faketime")
        let dir = TempDir()
        let library = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
        try #require(FileManager.default.fileExists(atPath: library), "faketime is installed (make test installs it)")
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", port = try freePort(), log = dir.path + "/events.jsonl"
        let receiver = ChildProcess()
        receiver.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        receiver.arguments = ["python3", URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Events/receiver.py").path,
                              String(port), secret, log]
        // The receiver checks each signature's timestamp against its own clock: it runs as far ahead.
        receiver.environment = ProcessInfo.processInfo.environment.merging(["LD_PRELOAD": library, "FAKETIME": "+2d"]) { $1 }
        receiver.standardError = FileHandle(forWritingAtPath: dir.file("receiver.err", []))
        try receiver.run()
        defer { receiver.stop() }
        let webhook = ["BLOBD_NOTIFY_WEBHOOK_HOOK": "http://127.0.0.1:\(port)/", "BLOBD_NOTIFY_SECRET_HOOK": secret]
        do {
            let (blobd, s3) = try Self.start(dataDir: data.path + "/data", environment: webhook)
            #expect(try curl(["-X", "PUT", s3 + "/logs"]).status == 200)
            let rules = #"{"rules":[{"id":"day","status":"Enabled","prefix":"app/","expiration_days":1}]}"#
            let set = try curl(["-X", "PUT", "-H", "Content-Type: application/json", "--data-binary", rules,
                                blobd.baseURL + "/v1/admin/buckets/logs/lifecycle"])
            #expect(set.status == 200 && set.text == rules)
            let subscriptions = #"{"subscriptions":[{"id":"expiry","target":"HOOK","events":["s3:LifecycleExpiration:*"]}]}"#
            #expect(try curl(["-X", "PUT", "-H", "Content-Type: application/json", "--data-binary", subscriptions,
                              blobd.baseURL + "/v1/admin/buckets/logs/notifications"]).status == 200)
            for key in ["app/1.log", "app/2.log", "keep/3.log"] {
                #expect(try curl(["-X", "PUT", "--data-binary", "@" + dir.file("b", Array(key.utf8)), s3 + "/logs/" + key]).status == 200)
            }
            #expect(blobd.stop() == 0)
        }
        // Preloaded into a process started directly, libfaketime's constructor adds FAKETIME_SHARED
        // to the environment (moving it off the initial stack block), after which the Swift
        // runtime finds no arguments: CommandLine.arguments is [] and blobd would serve its
        // defaults (port 8080, ./data). Started by a program already under libfaketime
        // (faketime(1), timeout(1)), the variable is inherited and the arguments are there. So
        // blobd takes its settings from BLOBD_* here, which it reads for every flag.
        let (later, s3) = try Self.start(dataDir: data.path + "/data", environment: [
            "LD_PRELOAD": library, "FAKETIME": "+2d", "BLOBD_DATA_DIR": data.path + "/data", "BLOBD_LISTEN": "127.0.0.1:0",
            "BLOBD_S3_LISTEN": "127.0.0.1:0",
        ].merging(webhook) { $1 })
        let now = try curl([later.baseURL + "/healthz"])
        let seen = try #require(now.header("Date").flatMap(parseHTTPDate))
        #expect(seen.timeIntervalSinceNow > 2 * 86_400 - 60, "blobd runs two days ahead")
        for key in ["app/1.log", "app/2.log"] {
            #expect(try curl([later.baseURL + "/v1/blobs/logs/" + key]).status == 404)
            #expect(try curl(["-I", s3 + "/logs/" + key]).status == 404)
        }
        #expect(try curl([s3 + "/logs/keep/3.log"]).text == "keep/3.log")
        let listed = try curl([s3 + "/logs?list-type=2"]).text
        #expect(listed.contains("<Key>keep/3.log</Key>") && !listed.contains("app/"))
        #expect((try curl([later.baseURL + "/v1/blobs?prefix=logs/"]).json["blobs"] as? [[String: Any]])?.count == 1)
        #expect(eventually(within: 10) { files(under: data.path + "/data/blobs").count == 1 })
        #expect(eventually(within: 5) { later.stderr.contains("Expired blobs removed blobs.count=2") })
        // Their events, signed and verified, one per expired object.
        func delivered() -> [[String: Any]] {
            let lines = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
            return lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        }
        #expect(eventually(within: 15) { delivered().count == 2 }, "\((try? String(contentsOfFile: dir.path + "/receiver.err", encoding: .utf8)) ?? "")")
        let records = delivered().compactMap { line -> (Bool, String, String)? in
            guard let payload = (line["payload"] as? String).flatMap({ try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }),
                  let record = (payload["Records"] as? [[String: Any]])?.first, let name = record["eventName"] as? String,
                  let key = ((record["s3"] as? [String: Any])?["object"] as? [String: Any])?["key"] as? String else { return nil }
            return (line["ok"] as? Bool ?? false, name, key)
        }.sorted { $0.2 < $1.2 }
        #expect(records.map(\.0) == [true, true], "every signature verifies")
        #expect(records.map(\.1) == ["LifecycleExpiration:Delete", "LifecycleExpiration:Delete"])
        #expect(records.map(\.2) == ["app/1.log", "app/2.log"])
    }

    /// An element blobd does not keep is 501 NotImplemented naming it, and nothing is stored;
    /// malformed or invalid configurations get S3's codes; the /v1 route answers its problems.
    @Test func unsupportedAndInvalidConfigurations() throws {
        let (blobd, s3) = try Self.start()
        #expect(try curl(["-X", "PUT", s3 + "/cfg"]).status == 200)
        func put(_ rule: String) throws -> CurlResponse {
            try curl(["-X", "PUT", "--data-binary", "<LifecycleConfiguration><Rule><ID>r</ID><Status>Enabled</Status>" + rule
                      + "</Rule></LifecycleConfiguration>", s3 + "/cfg?lifecycle"])
        }
        let cases: [(String, Int, String)] = [
            ("<Filter><Prefix/></Filter><Transition><Days>30</Days><StorageClass>GLACIER</StorageClass></Transition>", 501, "Transition"),
            ("<Filter><Prefix/></Filter><NoncurrentVersionExpiration><NoncurrentDays>3</NoncurrentDays>"
             + "<NewerNoncurrentVersions>2</NewerNoncurrentVersions></NoncurrentVersionExpiration>", 501, "NewerNoncurrentVersions"),
            ("<Filter/><NoncurrentVersionExpiration><NoncurrentDays>0</NoncurrentDays></NoncurrentVersionExpiration>", 400, "InvalidArgument"),
            ("<Filter><Tag><Key>a</Key><Value>b</Value></Tag></Filter><Expiration><Days>1</Days></Expiration>", 501, "Filter Tag"),
            ("<Filter><And><Prefix>x</Prefix><Tag><Key>a</Key><Value>b</Value></Tag></And></Filter><Expiration><Days>1</Days></Expiration>",
             501, "Filter And Tag"),
            ("<Filter><ObjectSizeGreaterThan>5</ObjectSizeGreaterThan></Filter><Expiration><Days>1</Days></Expiration>", 501,
             "ObjectSizeGreaterThan"),
            ("<Filter/><Expiration><Days>3</Days><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration>", 400,
             "MalformedXML"),
            ("<Filter/><Expiration><Days>0</Days></Expiration>", 400, "InvalidArgument"),
            ("<Filter/><Expiration><Date>2027-01-01T12:00:00.000Z</Date></Expiration>", 400, "InvalidArgument"),
            ("<Filter/><Prefix>x</Prefix><Expiration><Days>1</Days></Expiration>", 400, "MalformedXML"),
            ("<Filter/><Expiration><Days>1</Days><Date>2027-01-01T00:00:00.000Z</Date></Expiration>", 400, "MalformedXML"),
            ("<Filter/>", 400, "InvalidArgument"),
            ("<Filter/><Expiration><Days>x</Days></Expiration>", 400, "MalformedXML"),
        ]
        for (rule, status, named) in cases {
            let answer = try put(rule)
            #expect(answer.status == status && answer.text.contains(named), "\(rule): \(answer.status) \(answer.text)")
            #expect(try curl([s3 + "/cfg?lifecycle"]).text.contains("NoSuchLifecycleConfiguration"), "nothing stored for \(rule)")
        }
        #expect(try curl([blobd.baseURL + "/v1/admin/buckets/cfg/lifecycle"]).json["type"] as? String
                == "https://blobd.dev/problems/setting-not-found")
        #expect(try put("<Prefix>old/</Prefix><Expiration><Date>2027-01-01T00:00:00Z</Date></Expiration>").status == 200)
        #expect(try curl([blobd.baseURL + "/v1/admin/buckets/cfg/lifecycle"]).text
                == #"{"rules":[{"id":"r","status":"Enabled","prefix":"old/","expiration_date":"2027-01-01T00:00:00Z"}]}"#)
        #expect(try curl([s3 + "/cfg?lifecycle"]).text.contains("<Date>2027-01-01T00:00:00.000Z</Date>"))
        for unsupported in ["transitions", "newer_noncurrent_versions", "tags", "object_size_greater_than"] {
            let answer = try curl(["-X", "PUT", "-H", "Content-Type: application/json", "--data-binary",
                                   #"{"rules":[{"status":"Enabled","noncurrent_days":3,"\#(unsupported)":1}]}"#,
                                   blobd.baseURL + "/v1/admin/buckets/cfg/lifecycle"])
            #expect(answer.status == 501 && answer.text.contains(unsupported), "\(unsupported): \(answer.status) \(answer.text)")
        }
        for bad in [#"{"rules":[{"status":"Enabled","transitionz":[]}]}"#, #"{"rules":[]}"#, #"{"rules":[{"status":"On"}]}"#,
                    #"{"rules":[{"status":"Enabled","expiration_days":1.5}]}"#, "[]"] {
            let answer = try curl(["-X", "PUT", "-H", "Content-Type: application/json", "--data-binary", bad,
                                   blobd.baseURL + "/v1/admin/buckets/cfg/lifecycle"])
            #expect(answer.status == 400, "\(bad)")
        }
        #expect(try curl(["-X", "PUT", "-H", "Content-Type: application/json", "--data-binary", #"{"rules":[]}"#,
                          blobd.baseURL + "/v1/admin/buckets/nobucket/lifecycle"]).status == 404)
        #expect(try curl(["-X", "DELETE", blobd.baseURL + "/v1/admin/buckets/cfg/lifecycle"]).status == 204)
        #expect(try curl([s3 + "/cfg?lifecycle"]).text.contains("NoSuchLifecycleConfiguration"))
    }
}

/// Who may configure lifecycle rules: admin on the bucket to set or remove them (S3 and /v1);
/// reading them, as reading a bucket policy, a grant on the bucket.
@Suite struct LifecycleAccessTests {
    @Test func settingRulesNeedsAdmin() throws {
        let dir = TempDir()
        let tokens = dir.file("tokens", Array("""
            s3 ADMINKEY admin-secret admin:logs,read:logs,write:logs
            s3 WRITERKEY writer-secret read:logs,write:logs,delete:logs
            writer-token read:logs,write:logs
            """.utf8))
        chmod(tokens, 0o600)
        let blobd = try BlobdProcess(["--tokens-file", tokens, "--s3-listen", "127.0.0.1:0"])
        let port = try #require(blobd.s3Port)
        let result = try run("/usr/bin/env", ["ENDPOINT=http://127.0.0.1:\(port)", "python3", "-c", """
            import os, boto3, botocore
            def client(key, secret):
                return boto3.client("s3", endpoint_url=os.environ["ENDPOINT"], region_name="us-east-1",
                                    aws_access_key_id=key, aws_secret_access_key=secret)
            admin, writer = client("ADMINKEY", "admin-secret"), client("WRITERKEY", "writer-secret")
            def code(call):
                try:
                    call()
                except botocore.exceptions.ClientError as e:
                    return e.response["Error"]["Code"]
            admin.create_bucket(Bucket="logs")
            config = {"Rules": [{"ID": "r", "Status": "Enabled", "Filter": {"Prefix": ""}, "Expiration": {"Days": 3}}]}
            assert code(lambda: writer.put_bucket_lifecycle_configuration(Bucket="logs", LifecycleConfiguration=config)) == "AccessDenied"
            assert code(lambda: writer.get_bucket_lifecycle_configuration(Bucket="logs")) == "NoSuchLifecycleConfiguration"
            admin.put_bucket_lifecycle_configuration(Bucket="logs", LifecycleConfiguration=config)
            assert writer.get_bucket_lifecycle_configuration(Bucket="logs")["Rules"][0]["ID"] == "r"
            assert code(lambda: writer.delete_bucket_lifecycle(Bucket="logs")) == "AccessDenied"
            admin.delete_bucket_lifecycle(Bucket="logs")
            """], timeout: 120)
        #expect(result.status == 0, "\(result.stderr)")
        let json = ["-H", "Content-Type: application/json", "--data-binary", #"{"rules":[{"status":"Enabled","expiration_days":1}]}"#]
        #expect(try curl(["-X", "PUT", "-H", "Authorization: Bearer writer-token"] + json
                         + [blobd.baseURL + "/v1/admin/buckets/logs/lifecycle"]).status == 403)
        #expect(try curl(["-H", "Authorization: Bearer writer-token", blobd.baseURL + "/v1/admin/buckets/logs/lifecycle"]).status == 403)
    }
}

import BlobCore
import Testing

/// Durations of `?ttl=` and tus `ttl`, and S3's date rule for lifecycle expiration.
@Suite struct ExpiryRuleTests {
    @Test func durations() {
        #expect(ExpiryDuration.parse("2") == 2)
        #expect(ExpiryDuration.parse("2s") == 2)
        #expect(ExpiryDuration.parse("30m") == 1_800)
        #expect(ExpiryDuration.parse("24h") == 86_400)
        #expect(ExpiryDuration.parse("7d") == 604_800)
        #expect(ExpiryDuration.parse("36500d") == ExpiryDuration.maximum)
        for bad in ["", "0", "0s", "s", "-1", "+1", "1.5", "1 s", "2w", "36501d", "999999999999d", "9999999999999", "1e3", "٣s"] {
            #expect(ExpiryDuration.parse(bad) == nil, "\(bad)")
        }
    }

    /// Creation plus Days, rounded up to the next midnight UTC (S3's example: 10:30 on
    /// 2014-01-15 with 3 days expires at 2014-01-19 00:00); a Date is the deadline itself.
    @Test func dateRule() throws {
        let created: Int64 = 1_389_781_800  // 2014-01-15T10:30:00Z
        #expect(LifecycleRule(id: "r", expirationDays: 3).deadline(created: created) == 1_390_089_600)  // 2014-01-19
        #expect(LifecycleRule(id: "r", expirationDays: 1).deadline(created: 1_389_744_000) == 1_389_830_400)  // a midnight stays
        #expect(LifecycleRule(id: "r", expirationDate: 1_798_761_600).deadline(created: created) == 1_798_761_600)
        #expect(LifecycleRule(id: "r", abortIncompleteDays: 2).deadline(created: created) == nil)
    }

    /// Rules match by bucket and prefix, enabled ones only; the earliest deadline wins, with its
    /// id; a blob's own deadline comes first when earlier.
    @Test func rulesByBucketAndPrefix() throws {
        let rules = LifecycleRules(["logs": [
            LifecycleRule(id: "long", prefix: "app/", expirationDays: 30),
            LifecycleRule(id: "short", prefix: "app/tmp/", expirationDays: 1, abortIncompleteDays: 2),
            LifecycleRule(id: "off", enabled: false, prefix: "", expirationDays: 1),
        ]])
        let created: Int64 = 1_389_781_800
        #expect(rules.expiration(of: try BlobKey("logs/app/tmp/x"), created: created)?.ruleID == "short")
        #expect(rules.expiration(of: try BlobKey("logs/app/x"), created: created)?.ruleID == "long")
        #expect(rules.expiration(of: try BlobKey("logs/other"), created: created) == nil)
        #expect(rules.expiration(of: try BlobKey("other/app/x"), created: created) == nil)
        #expect(rules.abortDeadline(of: try BlobKey("logs/app/tmp/x"), initiated: 100) == 100 + 2 * 86_400)
        #expect(rules.abortDeadline(of: try BlobKey("logs/app/x"), initiated: 100) == nil)
        var record = BlobRecord(key: try BlobKey("logs/app/x"), version: "v", size: 0, sha256: [], contentType: "t", modified: created)
        #expect(rules.deadline(of: record) == rules.expiration(of: record.key, created: created)?.deadline)
        record.ttlExpires = created + 5
        #expect(rules.deadline(of: record) == created + 5)
        #expect(LifecycleRules().deadline(of: record) == created + 5)
    }
}

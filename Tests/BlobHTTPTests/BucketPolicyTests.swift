import BlobCore
import BlobStore
import Foundation
import Testing
@testable import HTTPCore
@testable import Access

/// Bucket policies of the common public shape become grants; every other element is refused,
/// naming it; canned ACLs become anonymous or authenticated grants.
@Suite struct BucketPolicyTests {
    static func policy(_ statements: String) -> [UInt8] {
        Array(#"{"Version":"2012-10-17","Statement":[\#(statements)]}"#.utf8)
    }

    static func statement(action: String = #""s3:GetObject""#, resource: String = #""arn:aws:s3:::b/pub/*""#,
                          principal: String = #""*""#, extra: String = "") -> String {
        #"{"Sid":"x","Effect":"Allow","Principal":\#(principal),"Action":\#(action),"Resource":\#(resource)\#(extra)}"#
    }

    static func grants(_ body: [UInt8]) throws -> [String] {
        try BucketPolicy(parsing: body, bucket: "b").grants.map(\.description)
    }

    @Test func publicPrefixAndListing() throws {
        let body = Self.policy(Self.statement() + "," + Self.statement(action: #""s3:ListBucket""#, resource: #""arn:aws:s3:::b""#,
            extra: #","Condition":{"StringLike":{"s3:prefix":["pub/*"]}}"#))
        #expect(try Self.grants(body) == ["read:b/pub/*"])
    }

    @Test func actionsAndResources() throws {
        let body = Self.policy(Self.statement(action: #"["s3:GetObject","s3:PutObject","s3:DeleteObject"]"#,
                                              resource: #"["arn:aws:s3:::b/*","arn:aws:s3:::b/one.txt"]"#,
                                              principal: #"{"AWS":"*"}"#))
        #expect(try Self.grants(body) == ["read:b/*", "read:b/one.txt", "write:b/*", "write:b/one.txt", "delete:b/*", "delete:b/one.txt"])
        let whole = Self.policy(Self.statement(resource: #""arn:aws:s3:::b/*""#) + ","
                                + Self.statement(action: #""s3:ListBucket""#, resource: #""arn:aws:s3:::b""#))
        #expect(try Self.grants(whole) == ["read:b/*"])
    }

    static let refused: [(String, BucketPolicy.ParseError)] = [
        (statement().replacingOccurrences(of: "Allow", with: "Deny"), .unsupported("Effect Deny")),
        (statement(principal: #"{"AWS":"arn:aws:iam::1:root"}"#), .unsupported(#"Principal {"AWS":"arn:aws:iam::1:root"} (only "*" is supported)"#)),
        (statement(action: #""s3:*""#), .unsupported("Action s3:*")),
        (statement(action: #""s3:GetObjectVersion""#), .unsupported("Action s3:GetObjectVersion")),
        (statement(resource: #""arn:aws:s3:::b/a*b""#), .unsupported("Resource arn:aws:s3:::b/a*b (a wildcard other than one '*' at the end)")),
        (statement(extra: #","Condition":{"IpAddress":{"aws:SourceIp":"1.2.3.4"}}"#),
         .unsupported("Condition on s3:GetObject (only s3:prefix on s3:ListBucket)")),
        (statement(action: #""s3:ListBucket""#, resource: #""arn:aws:s3:::b""#),
         .unsupported("s3:ListBucket on the whole bucket without s3:GetObject on every key it lists (blobd's read grant allows reading and listing together)")),
        (statement() + "," + statement(action: #""s3:ListBucket""#, resource: #""arn:aws:s3:::b""#,
                                       extra: #","Condition":{"StringEquals":{"s3:prefix":"other/"}}"#),
         .unsupported("s3:ListBucket on prefix 'other/' without s3:GetObject on every key it lists (blobd's read grant allows reading and listing together)")),
        (statement(action: #""s3:ListBucket""#, resource: #""arn:aws:s3:::b""#,
                   extra: #","Condition":{"StringLike":{"s3:delimiter":"/"}}"#),
         .unsupported(#"Condition {"StringLike":{"s3:delimiter":"/"}} (only StringLike or StringEquals on s3:prefix)"#)),
        (#"{"Effect":"Allow","Principal":"*","NotAction":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}"#, .unsupported("NotAction")),
        (statement(resource: #""arn:aws:s3:::other/*""#), .malformed("Policy has invalid resource arn:aws:s3:::other/* (not in bucket b).")),
        (statement(resource: #""arn:aws:s3:::b""#),
         .malformed("Action s3:GetObject does not apply to resource arn:aws:s3:::b; name objects as arn:aws:s3:::b/*.")),
        (#"{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}"#, .malformed("Missing required field Principal.")),
    ]

    @Test(arguments: 0..<refused.count) func refusals(_ index: Int) {
        let (statement, error) = Self.refused[index]
        #expect(throws: error) { try BucketPolicy(parsing: Self.policy(statement), bucket: "b") }
    }

    @Test func malformedDocuments() {
        for text in ["", "[]", "{", #"{"Statement":[]}"#, #"{"Version":"2020-01-01","Statement":[]}"#, #"{"Statements":[]}"#] {
            #expect(throws: BucketPolicy.ParseError.self) { try BucketPolicy(parsing: Array(text.utf8), bucket: "b") }
        }
        #expect(throws: BucketPolicy.ParseError.malformed("Policies must be at most 20 KB.")) {
            try BucketPolicy(parsing: [UInt8](repeating: 0x20, count: 20 * 1024 + 1), bucket: "b")
        }
    }

    @Test func cannedACLs() throws {
        #expect(try CannedACL(header: "bucket-owner-full-control", forObject: true) == .private)
        #expect(try CannedACL(header: " public-read ", forObject: false) == .publicRead)
        #expect(throws: CannedACL.ParseError.unsupported("the canned ACL 'log-delivery-write'")) {
            try CannedACL(header: "log-delivery-write", forObject: false)
        }
        #expect(throws: CannedACL.ParseError.unsupported("the canned ACL 'public-read-write' on an object")) {
            try CannedACL(header: "public-read-write", forObject: true)
        }
        #expect(throws: CannedACL.ParseError.invalid("public")) { try CannedACL(header: "public", forObject: false) }
    }

    /// Every setting's grants, computed in one place: ACLs of buckets and objects, policies;
    /// a setting that no longer reads grants nothing.
    @Test func settingGrants() {
        let grants = SettingGrants([
            BucketAccessSetting(bucket: "a", name: .acl, value: "public-read-write"),
            BucketAccessSetting(bucket: "b", name: .acl, value: "authenticated-read"),
            BucketAccessSetting(bucket: "c", name: .objectACL("x/y"), value: "public-read"),
            BucketAccessSetting(bucket: "c", name: .acl, value: "private"),
            BucketAccessSetting(bucket: "b", name: .policy, value: String(decoding: Self.policy(Self.statement()), as: UTF8.self)),
            BucketAccessSetting(bucket: "d", name: .acl, value: "bogus"),
        ])
        #expect(grants.anonymous.map(\.description) == ["read:a", "write:a", "read:c/x/y", "read:b/pub/*"])
        #expect(grants.authenticated.map(\.description) == ["read:b"])
        #expect(grants.unreadable == ["d acl"])
    }
}

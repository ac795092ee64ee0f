import Foundation
import HTTPTesting
import LiveBlobd
import Testing

/// SigV4 end to end: requests signed by the test's own signer (header-signed and presigned),
/// verified by blobd; a wrong signature, key, clock or payload is refused with S3's code.
@Suite struct S3SignatureTests {
    static let signer = SigV4Signer(accessKey: "AKIDBLOBDTEST", secret: "s3cr3t/Key+With=Symbols")
    static let tokens = "s3 AKIDBLOBDTEST s3cr3t/Key+With=Symbols read,write,delete\ns3 READONLY ro-secret read\n"
        + "s3 READWRITE rw-secret read,write\ns3 ELSEWHERE else-secret read:other,write:other,delete:other\n"

    func start(_ mode: Mode) throws -> TestServer {
        let server = try TestServer(mode, ServerSettings(tokens: Self.tokens, s3: true))
        let s3 = server.s3
        #expect(try s3.send("PUT", "/sig", Self.signer.headers("PUT", path: "/sig", host: s3.host)).status == 200)
        let body = Array("signed bytes".utf8)
        let put = try s3.put("/sig/a%20b", body,
                             Self.signer.headers("PUT", path: "/sig/a%20b", host: s3.host, payload: SigV4Signer.payloadHash(body)))
        #expect(put.status == 200)
        return server
    }

    @Test(arguments: Mode.selected) func headerSigned(_ mode: Mode) throws {
        let server = try start(mode)
        let s3 = server.s3
        let get = try s3.get("/sig/a%20b", Self.signer.headers("GET", path: "/sig/a%20b", host: s3.host))
        #expect(get.status == 200)
        #expect(get.text == "signed bytes")
        let listed = try s3.get("/sig?list-type=2&prefix=a",
                                Self.signer.headers("GET", path: "/sig", query: "list-type=2&prefix=a", host: s3.host))
        #expect(listed.status == 200)
        #expect(listed.text.contains("<Key>a b</Key>"))
        let readOnly = SigV4Signer(accessKey: "READONLY", secret: "ro-secret")
        #expect(try s3.get("/sig/a%20b", readOnly.headers("GET", path: "/sig/a%20b", host: s3.host)).status == 200, "read scope reads")
        let write = try s3.put("/sig/x", [1], readOnly.headers("PUT", path: "/sig/x", host: s3.host))
        #expect(write.status == 403)
        #expect(write.s3Code == "AccessDenied", "read scope cannot write")
        let anonymous = try s3.get("/sig/a%20b")
        #expect(anonymous.status == 403)
        #expect(anonymous.s3Code == "AccessDenied")
    }

    @Test(arguments: Mode.selected) func presigned(_ mode: Mode) throws {
        let server = try start(mode)
        let s3 = server.s3
        let url = Self.signer.presign("GET", path: "/sig/a%20b", host: s3.host, expires: 300)
        let get = try s3.get(url)
        #expect(get.status == 200)
        #expect(get.text == "signed bytes")
        #expect(try s3.get(url).status == 200, "a repeated URL is checked again and still valid")
        let tampered = try s3.get(url.replacingOccurrences(of: "a%20b", with: "other"))
        #expect(tampered.status == 403)
        #expect(tampered.s3Code == "SignatureDoesNotMatch", "a presigned URL names one object")
        let expired = try s3.get(Self.signer.presign("GET", path: "/sig/a%20b", host: s3.host, expires: 3600,
                                                     date: Date().addingTimeInterval(-7200)))
        #expect(expired.status == 403)
        #expect(expired.s3Code == "AccessDenied", "presigned, expired")
        let week = try s3.get(Self.signer.presign("GET", path: "/sig/a%20b", host: s3.host, expires: 604_801))
        #expect(week.status == 400)
        #expect(week.s3Code == "AuthorizationQueryParametersError", "expiry over 7 days")
        let put = Self.signer.presign("PUT", path: "/sig/uploaded", host: s3.host, expires: 300)
        #expect(try s3.put(put, Array("by url".utf8)).status == 200)
        #expect(try s3.get(url.replacingOccurrences(of: "a%20b", with: "uploaded")).status == 403)
    }

    @Test(arguments: Mode.selected) func badSignatures(_ mode: Mode) throws {
        let server = try start(mode)
        let s3 = server.s3
        let wrong = SigV4Signer(accessKey: "AKIDBLOBDTEST", secret: "wrong")
        let refused = try s3.get("/sig/a%20b", wrong.headers("GET", path: "/sig/a%20b", host: s3.host))
        #expect(refused.status == 403)
        #expect(refused.s3Code == "SignatureDoesNotMatch")
        let unknown = SigV4Signer(accessKey: "NOPE", secret: "x")
        #expect(try s3.get("/sig/a%20b", unknown.headers("GET", path: "/sig/a%20b", host: s3.host)).s3Code == "InvalidAccessKeyId")
        let late = try s3.get("/sig/a%20b", Self.signer.headers("GET", path: "/sig/a%20b", host: s3.host,
                                                                  date: Date().addingTimeInterval(-20 * 60)))
        #expect(late.status == 403)
        #expect(late.s3Code == "RequestTimeTooSkewed", "20 minutes of skew")
        // A body that does not match its signed SHA-256 is refused and not stored.
        let mismatch = try s3.put("/sig/checked", Array("these bytes".utf8),
                                  Self.signer.headers("PUT", path: "/sig/checked", host: s3.host,
                                                      payload: SigV4Signer.payloadHash(Array("other bytes".utf8))))
        #expect(mismatch.status == 400)
        #expect(mismatch.s3Code == "XAmzContentSHA256Mismatch")
        #expect(try s3.send("HEAD", "/sig/checked", Self.signer.headers("HEAD", path: "/sig/checked", host: s3.host)).status == 404,
                "nothing stored")
    }

    /// DeleteObjects with an unsupported subresource (`?delete&tagging`) is refused 501 naming
    /// it; DeleteObjects itself decides per key, so a key with no grant in the bucket, like one
    /// that may read and write there but not delete, gets an AccessDenied entry per key.
    /// Nothing is deleted.
    @Test(arguments: Mode.selected) func deleteObjectsWithASubresourceNeedsDelete(_ mode: Mode) throws {
        let server = try start(mode)
        let s3 = server.s3
        let batch = Array("<Delete><Object><Key>a b</Key></Object></Delete>".utf8)
        func post(_ signer: SigV4Signer, _ query: String, canonical: String) throws -> TestResponse {
            try s3.send("POST", "/sig?\(query)", signer.headers("POST", path: "/sig", query: canonical, host: s3.host)
                + ["Content-MD5: \(md5Base64(batch))"], body: batch)
        }
        let elsewhere = SigV4Signer(accessKey: "ELSEWHERE", secret: "else-secret")
        // DeleteObjects decides per key whatever the key holds on the bucket (issue 35): a key
        // with no grant there gets an AccessDenied entry, and the subresource its 501.
        let refusedSubresource = try post(elsewhere, "delete&tagging", canonical: "delete=&tagging=")
        #expect(refusedSubresource.status == 501 && refusedSubresource.s3Code == "NotImplemented", "\(refusedSubresource.text)")
        let denied = try post(elsewhere, "delete", canonical: "delete=")
        #expect(denied.status == 200)
        #expect(denied.text.contains("<Error><Key>a b</Key><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"),
                "\(denied.text)")
        let writer = SigV4Signer(accessKey: "READWRITE", secret: "rw-secret")
        let perKey = try post(writer, "delete", canonical: "delete=")
        #expect(perKey.status == 200)
        #expect(perKey.text.contains("<Error><Key>a b</Key><Code>AccessDenied</Code><Message>Access Denied</Message></Error>"),
                "\(perKey.text)")
        #expect(try post(writer, "delete&tagging", canonical: "delete=&tagging=").status == 501)
        let unsupported = try post(Self.signer, "delete&tagging", canonical: "delete=&tagging=")
        #expect(unsupported.status == 501, "\(unsupported.text)")
        #expect(unsupported.s3Code == "NotImplemented")
        #expect(element("Message", in: unsupported.text) == "blobd&apos;s S3 dialect does not support &apos;tagging&apos;.")
        let kept = try s3.get("/sig/a%20b", Self.signer.headers("GET", path: "/sig/a%20b", host: s3.host))
        #expect(kept.status == 200)
        #expect(kept.text == "signed bytes", "nothing was deleted")
    }
}

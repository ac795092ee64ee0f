import BlobCore
import Foundation
import MicroHTTPD
import Testing
@testable import HTTPCore
@testable import Access

/// Bearer tokens become a principal with grants, and one function decides what it may do.
@Suite struct AuthorizationTests {
    /// A tokens file with a read-only token, a read-write one, a bucket-scoped one, an S3 key
    /// and an anonymous line, mode 600.
    static func policy(publicRead: Bool, anonymous: String? = nil) throws -> AccessPolicy {
        let path = NSTemporaryDirectory() + "blobd-tokens-\(UUID().uuidString)"
        let lines = "reader read\nwriter read,write\nphotos read:photos,create:photos/in/*\ns3 AKID secret read,delete\n"
            + (anonymous.map { "anonymous \($0)\n" } ?? "")
        try lines.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return try AccessPolicy(tokensFile: path, publicRead: publicRead)
    }

    static func head(authorization: String?) -> HTTPRequestHead {
        HTTPRequestHead(method: "GET", path: Array("/v1/blobs/a".utf8), version: "HTTP/1.1",
                        headers: authorization.map { [("Authorization", $0)] } ?? [], query: nil, peer: nil,
                        isStrictlyFramed: true)
    }

    static func key(_ text: String) -> AccessRequirement { .key(.read, Array(text.utf8)) }

    @Test func bearerTokensBecomePrincipals() throws {
        let access = try Self.policy(publicRead: false)
        let bearer = BearerAuthenticator(access)
        #expect(try bearer.authenticate(Self.head(authorization: nil)) == .anonymous(.none))
        let writer = try bearer.authenticate(Self.head(authorization: "Bearer writer"))
        #expect(writer.grants == Grants([Grant(.read), Grant(.write)]))
        guard case .bearer(let digest) = writer.identity else { Issue.record("not a bearer principal"); return }
        #expect(digest.count == 32 && digest != "writer")
        #expect(throws: HTTPError.unauthorized(.unknownCredential, "The bearer token is not known.")) {
            try bearer.authenticate(Self.head(authorization: "Bearer nobody"))
        }
        #expect(throws: HTTPError.unauthorized(.unknownCredential, "The Authorization header must be 'Bearer TOKEN'.")) {
            try bearer.authenticate(Self.head(authorization: "Basic d3JpdGVy"))
        }
    }

    @Test func anonymousGrantsComeFromTheFileAndPublicRead() throws {
        #expect(try AccessPolicy(tokensFile: nil, publicRead: false).anonymousGrants == .everything)
        #expect(try Self.policy(publicRead: false).anonymousGrants == .none)
        #expect(try Self.policy(publicRead: true).anonymousGrants == Grants([Grant(.read)]))
        #expect(try Self.policy(publicRead: false, anonymous: "read:pub/docs*").anonymousGrants
                == Grants([Grant(.read, .prefix(Array("pub/docs".utf8)))]))
        // A credential holds its own grants and every caller's.
        let photos = try BearerAuthenticator(try Self.policy(publicRead: false, anonymous: "read:pub"))
            .authenticate(Self.head(authorization: "Bearer photos"))
        #expect(photos.grants.permits(Self.key("pub/x")) && photos.grants.permits(Self.key("photos/x")))
        #expect(!photos.grants.permits(Self.key("other/x")))
    }

    @Test func authorizeAnswers401And403() throws {
        let access = try Self.policy(publicRead: false, anonymous: "read:pub")
        #expect(throws: HTTPError.unauthorized(.noCredential, "This request needs a bearer token.")) {
            try access.authorize(Self.head(authorization: nil), Self.key("photos/a"))
        }
        #expect(try access.authorize(Self.head(authorization: nil), Self.key("pub/a")).isAnonymous)
        let write = AccessRequirement.key(.write, Array("photos/a".utf8))
        #expect(throws: HTTPError.forbidden(write)) {
            try access.authorize(Self.head(authorization: "Bearer reader"), .key(.write, Array("photos/a".utf8)))
        }
        #expect(throws: HTTPError.forbidden(write)) {
            try access.authorize(Self.head(authorization: "Bearer photos"), write)
        }
        let inbox = AccessRequirement.key(.write, Array("photos/in/a".utf8))
        let photos = try access.authorize(Self.head(authorization: "Bearer photos"), inbox)
        #expect(photos.write(try BlobKey("photos/in/a")) == .createOnly)
        #expect(try access.authorize(Self.head(authorization: "Bearer writer"), write).write(try BlobKey("photos/a")) == .replace)
        // Where every caller may read, an unknown token does not matter.
        _ = try Self.policy(publicRead: true).authorize(Self.head(authorization: "Bearer nobody"), Self.key("a/b"))
        #expect(throws: HTTPError.unauthorized(.unknownCredential, "The bearer token is not known.")) {
            try access.authorize(Self.head(authorization: "Bearer nobody"), Self.key("photos/a"))
        }
    }
}

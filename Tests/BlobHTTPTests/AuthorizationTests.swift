import Foundation
import MicroHTTPD
import Testing
@testable import HTTPCore

/// Bearer tokens become a principal, and one function decides what a principal may do.
@Suite struct AuthorizationTests {
    /// A tokens file with a read-only token and a read-write one, mode 600.
    static func policy(publicRead: Bool) throws -> AccessPolicy {
        let path = NSTemporaryDirectory() + "blobd-tokens-\(UUID().uuidString)"
        try "reader read\nwriter read,write\ns3 AKID secret read,delete\n".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return try AccessPolicy(tokensFile: path, publicRead: publicRead)
    }

    static func head(authorization: String?) -> HTTPRequestHead {
        HTTPRequestHead(method: "GET", path: Array("/v1/blobs/a".utf8), version: "HTTP/1.1",
                        headers: authorization.map { [("Authorization", $0)] } ?? [], query: nil, peer: nil,
                        isStrictlyFramed: true)
    }

    @Test func bearerTokensBecomePrincipals() throws {
        let access = try Self.policy(publicRead: false)
        let bearer = BearerAuthenticator(access)
        #expect(try bearer.authenticate(Self.head(authorization: nil)) == .anonymous)
        let writer = try bearer.authenticate(Self.head(authorization: "Bearer writer"))
        #expect(writer.scopes == [.read, .write])
        guard case .bearer(let digest) = writer.identity else { Issue.record("not a bearer principal"); return }
        #expect(digest.count == 32 && digest != "writer")
        #expect(throws: HTTPError.unauthorized("The bearer token is not known.")) {
            try bearer.authenticate(Self.head(authorization: "Bearer nobody"))
        }
        #expect(throws: HTTPError.unauthorized("The Authorization header must be 'Bearer TOKEN'.")) {
            try bearer.authenticate(Self.head(authorization: "Basic d3JpdGVy"))
        }
    }

    @Test func oneDecisionForEveryPrincipal() throws {
        let closed = try Self.policy(publicRead: false)
        let publicRead = try Self.policy(publicRead: true)
        let open = try AccessPolicy(tokensFile: nil, publicRead: false)
        let reader = Principal(.bearer("r"), scopes: [.read])
        let key = Principal(.accessKey("AKID"), scopes: [.write])
        for scope in Scope.allCases {
            #expect(open.allows(.anonymous, scope))
            #expect(!closed.allows(.anonymous, scope))
            #expect(publicRead.allows(.anonymous, scope) == (scope == .read))
            // A credential's scopes decide, even where anonymous callers may read.
            #expect(closed.allows(reader, scope) == (scope == .read))
            #expect(publicRead.allows(key, scope) == (scope == .write))
        }
    }

    @Test func authorizeKeepsItsAnswers() throws {
        let access = try Self.policy(publicRead: false)
        #expect(throws: HTTPError.unauthorized("This request needs a bearer token.")) {
            try access.authorize(Self.head(authorization: nil), for: .read)
        }
        #expect(throws: HTTPError.forbidden("write")) {
            try access.authorize(Self.head(authorization: "Bearer reader"), for: .write)
        }
        try access.authorize(Self.head(authorization: "Bearer writer"), for: .write)
        // Under public read a read is not authenticated: an unknown token does not matter.
        try Self.policy(publicRead: true).authorize(Self.head(authorization: "Bearer nobody"), for: .read)
    }
}

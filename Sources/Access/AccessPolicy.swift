
import BlobStore
import Foundation
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif
import MicroHTTPD
import Synchronization
import HTTPCore
import Observability

/// Who may do what: bearer tokens and S3 keys from a tokens file, each with grants, and the
/// grants of callers without a credential. Without a tokens file every request is allowed. The
/// file can be reloaded (SIGHUP) without dropping connections.
public final class AccessPolicy: Sendable {
    /// Why a tokens file was refused.
    public struct TokensFileError: Error, CustomStringConvertible {
        public let description: String
    }

    private struct Entry: Sendable {
        /// SHA-256 of the token: comparisons run over fixed-size digests in constant time.
        let digest: [UInt8]
        let grants: Grants
        /// The line's `name=`, for logs and `/v1/whoami`.
        var name: String? = nil
    }

    /// An S3 access key: its secret (needed to check HMAC signatures), its grants, and the id of
    /// the catalog key it is (nil for a tokens-file line).
    public struct S3Key: Sendable {
        public let secret: String
        public let grants: Grants
        public var keyID: String? = nil
        /// Its name: the catalog key's, or the tokens-file line's `name=`.
        public var keyName: String? = nil
    }

    private struct Tokens: Sendable {
        var bearer: [Entry] = []
        /// The same entries by digest: a request finds its token in one lookup however many there are.
        var byDigest: [[UInt8]: Entry] = [:]
        var s3: [String: S3Key] = [:]
        /// `anonymous` lines, each grant once (made at load, not on every request).
        var anonymous: Grants = .none
    }

    /// The tokens file, nil when access is open.
    public let tokensFile: String?
    /// `--public-read`: anonymous callers hold `read` (GET, HEAD and listings) on everything.
    public let publicRead: Bool
    /// The proxies whose forwarded client address is believed (`--trusted-proxy`): in open
    /// access an upload counts against that address, not the proxy's.
    public let proxies: TrustedProxies
    private let tokens: Mutex<Tokens>
    /// The keys of the catalog (`/v1/admin/keys`, bootstrap files), once the store is open.
    public let directory: KeyDirectory
    /// Access is closed without a tokens file too (a bootstrap file gives the keys).
    private let closed: Bool

    /// Loads the tokens file (if any). `closed`: credentials are needed even without a tokens
    /// file (a bootstrap file gives keys). The catalog's keys expire by `clock`.
    public init(tokensFile: String?, publicRead: Bool, proxies: TrustedProxies = TrustedProxies(),
                closed: Bool = false, clock: WallClock = .system) throws(TokensFileError) {
        directory = KeyDirectory(clock: clock)
        self.tokensFile = tokensFile
        self.publicRead = publicRead
        self.proxies = proxies
        self.closed = closed
        self.tokens = Mutex(try tokensFile.map(Self.load) ?? Tokens())
    }

    /// What `--public-read` gives every caller.
    private static let readEverything = Grants([Grant(.read)])

    /// Open access: no tokens file and no bootstrap file.
    public var isOpen: Bool { tokensFile == nil && !closed }

    /// Number of tokens loaded.
    public var tokenCount: Int { tokens.withLock { $0.bearer.count } }

    /// Number of S3 access keys loaded.
    public var s3KeyCount: Int { tokens.withLock { $0.s3.count } }

    /// The S3 access key `id`: a tokens-file line, else a catalog key that has not expired.
    public func s3Key(_ id: String) -> S3Key? {
        if let line = tokens.withLock({ $0.s3[id] }) { return line }
        return directory.key(accessKeyID: id).map {
            S3Key(secret: $0.secretAccessKey, grants: $0.grants, keyID: $0.id, keyName: $0.name)
        }
    }

    /// Reads the tokens file again; on error the tokens in force stay as they were.
    public func reload() throws(TokensFileError) {
        guard let tokensFile else { return }
        let fresh = try Self.load(tokensFile)
        tokens.withLock { $0 = fresh }
    }

    /// A credential of the tokens file, as the admin API lists it (read-only, never its secret).
    public struct FileCredential: Sendable {
        /// The principal's name (`token:DIGEST`, `s3:ACCESS_KEY_ID`).
        public let principal: String
        public let grants: Grants
        public let accessKeyID: String?
        /// The line's `name=`, if it has one.
        public var name: String? = nil
    }

    /// The tokens file's credentials, bearer tokens first.
    public var fileCredentials: [FileCredential] {
        tokens.withLock { tokens in
            tokens.bearer.map {
                FileCredential(principal: "token:" + hex($0.digest.prefix(16)), grants: $0.grants, accessKeyID: nil, name: $0.name)
            } + tokens.s3.keys.sorted().compactMap { id in
                tokens.s3[id].map { FileCredential(principal: "s3:" + id, grants: $0.grants, accessKeyID: id, name: $0.keyName) }
            }
        }
    }

    /// The own grants of the credential a principal names (`token:…`, `s3:…`, `key:ID`), if it
    /// still exists: a share link works as long as its maker keeps the grant.
    public func grants(ofPrincipal name: String) -> Grants? {
        if name.hasPrefix("key:") {
            let id = String(name.dropFirst(4))
            return directory.keys.first { $0.id == id && !$0.isExpired(now: directory.clock.seconds) }?.grants
        }
        return fileCredentials.first { $0.principal == name }?.grants
    }

    /// The grants of a caller without a credential: everything in open access, else the
    /// tokens file's `anonymous` lines and `read` with `--public-read`.
    public var anonymousGrants: Grants {
        if isOpen { return .everything }
        let lines = tokens.withLock { $0.anonymous }
        return lines.union(publicRead ? Self.readEverything : .none).union(directory.anonymous)
    }

    /// What every caller with a credential holds, besides its own grants: the anonymous grants
    /// and those of authenticated-read ACLs. Empty additions in open access (every grant is held).
    public var authenticatedGrants: Grants { authenticatedGrants(adding: anonymousGrants) }

    /// `anonymous` (the anonymous grants, already read) with those of authenticated-read ACLs.
    public func authenticatedGrants(adding anonymous: Grants) -> Grants {
        let authenticated = directory.authenticated
        return isOpen || authenticated.list.isEmpty ? anonymous : anonymous.union(authenticated)
    }

    /// The grants of the bearer token whose SHA-256 is `digest`, nil if unknown, the id of the
    /// catalog key it is (nil for a tokens-file line), and its name (a catalog key's, or a
    /// tokens-file line's `name=`). Tokens are found by the
    /// SHA-256 of what the client sent, in a hash table: how long a lookup takes depends on that
    /// digest, which tells a client nothing about any token's (finding a token near another's
    /// digest means inverting SHA-256), so the lookup need not scan every token in constant time.
    func bearerGrants(digest presented: [UInt8]) -> (grants: Grants, keyID: String?, name: String?)? {
        if let line = tokens.withLock({ $0.byDigest[presented] }) { return (line.grants, nil, line.name) }
        return directory.key(tokenHash: presented).map { ($0.grants, $0.id, $0.name) }
    }

    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for i in a.indices { difference |= a[i] ^ b[i] }
        return difference == 0
    }

    /// One line of a tokens file.
    enum Line: Equatable {
        /// `TOKEN GRANT[,GRANT...] [name=NAME]`: a bearer token.
        case bearer(token: String, grants: Grants, name: String? = nil)
        /// `s3 ACCESS_KEY_ID SECRET GRANT[,GRANT...] [name=NAME]`: an S3 access key.
        case s3(id: String, secret: String, grants: Grants, name: String? = nil)
        /// `anonymous GRANT[,GRANT...]`: what callers without a credential may do.
        case anonymous(Grants)
    }

    /// The most bytes a tokens-file line's `name=` may hold (as a catalog key's name).
    static let maximumNameLength = 200

    /// Parses a tokens file: `TOKEN GRANTS`, `s3 ACCESS_KEY_ID SECRET GRANTS` and
    /// `anonymous GRANTS` lines, where GRANTS is `ACTION[:PATTERN]` joined by commas (the old
    /// scopes `read`, `write`, `delete` are grants on `*`); `#` starts a comment. A token or S3
    /// line may end with `name=NAME`, which names its caller in logs and `/v1/whoami` (a last
    /// word GRANTS never is: no action is spelt `name=`).
    static func parse(_ text: String) throws(TokensFileError) -> [Line] {
        var result: [Line] = []
        for (number, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            var fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
            if fields.isEmpty { continue }
            let name = try lineName(&fields, line: number + 1)
            let isS3 = fields[0] == "s3" && fields.count == 4
            guard fields.count == 2 || isS3 else {
                throw TokensFileError(description: "line \(number + 1): expected 'TOKEN GRANT[,GRANT...] [name=NAME]', "
                                      + "'s3 ACCESS_KEY_ID SECRET GRANT[,GRANT...] [name=NAME]' or 'anonymous GRANT[,GRANT...]'")
            }
            let grants: Grants
            do throws(Grant.ParseError) {
                grants = try Grants(parsing: fields[fields.count - 1])
            } catch {
                throw TokensFileError(description: "line \(number + 1): \(error)")
            }
            if isS3 {
                result.append(.s3(id: String(fields[1]), secret: String(fields[2]), grants: grants, name: name))
            } else if fields[0] == "anonymous" {
                guard name == nil else { throw TokensFileError(description: "line \(number + 1): an anonymous line takes no name") }
                result.append(.anonymous(grants))
            } else {
                result.append(.bearer(token: String(fields[0]), grants: grants, name: name))
            }
        }
        return result
    }

    /// A line's trailing `name=NAME` word, taken off `fields`; nil without one. A name is 1 to
    /// 200 bytes without control characters (the line's spaces already split it).
    private static func lineName(_ fields: inout [Substring], line: Int) throws(TokensFileError) -> String? {
        guard fields.count > 2, let last = fields.last, last.hasPrefix("name=") else { return nil }
        let name = String(last.dropFirst("name=".count))
        guard (1...maximumNameLength).contains(name.utf8.count), !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw TokensFileError(description: "line \(line): name= takes 1 to \(maximumNameLength) bytes without control characters")
        }
        fields.removeLast()
        return name
    }

    private static func load(_ path: String) throws(TokensFileError) -> Tokens {
        let data = try read(path)
        var tokens = Tokens()
        for line in try parse(String(decoding: data, as: UTF8.self)) {
            switch line {
            case .s3(let id, let secret, let grants, let name): tokens.s3[id] = S3Key(secret: secret, grants: grants, keyName: name)
            case .bearer(let token, let grants, let name):
                let entry = Entry(digest: SHA256Hasher.hash(Array(token.utf8)), grants: grants, name: name)
                tokens.bearer.append(entry)
                tokens.byDigest[entry.digest] = entry
            case .anonymous(let grants): tokens.anonymous = Grants(tokens.anonymous.list + grants.list)
            }
        }
        return tokens
    }

    /// The tokens file's bytes, if its mode is safe: writable by its owner only (anyone else
    /// who can write it can grant themselves every scope) and not readable by others. Reading
    /// by a group is allowed, for a file owned by root and given to blobd's group, as the
    /// environment file is. fstat on the open file, so the mode checked is the file's read.
    static func read(_ path: String) throws(TokensFileError) -> [UInt8] {
        // O_NONBLOCK: a FIFO at the path must not hang the start or the SIGHUP (no effect on a file).
        let descriptor: FileDescriptor
        do throws(Errno) {
            descriptor = try FileDescriptor.open(path, O_RDONLY | O_NONBLOCK)
        } catch {
            throw TokensFileError(description: "cannot read the tokens file \(path): \(error)")
        }
        return try descriptor.closeAfter { descriptor throws(TokensFileError) in
            guard let info = try? descriptor.status(), info.st_mode & 0o170000 == 0o100000 else {
                throw TokensFileError(description: "the tokens file \(path) is not a regular file")
            }
            try checkMode(info.st_mode & 0o7777, path)
            var bytes: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 16 * 1024)
            while true {
                let count: Int
                do throws(Errno) {
                    count = try buffer.withUnsafeMutableBytes { buffer in Result { () throws(Errno) in try descriptor.read(into: buffer) } }.get()
                } catch {
                    throw TokensFileError(description: "cannot read the tokens file \(path): \(error)")
                }
                if count == 0 { return bytes }
                bytes += buffer[..<count]
            }
        }
    }

    /// Refuses a tokens file mode that lets anyone but its owner write it, or others read it.
    static func checkMode(_ mode: mode_t, _ path: String) throws(TokensFileError) {
        let shown = "0" + String(mode, radix: 8)
        if mode & 0o022 != 0 {
            throw TokensFileError(description: "the tokens file \(path) is writable by its group or others (mode \(shown)); chmod 600 it")
        }
        if mode & 0o004 != 0 {
            throw TokensFileError(description: "the tokens file \(path) is readable by others (mode \(shown)); chmod 600 it (or 640 for a group)")
        }
    }
}

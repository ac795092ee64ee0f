
import BlobStore
import Foundation
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif
import MicroHTTPD
import Synchronization

/// What a token may do.
public enum Scope: String, Sendable, CaseIterable {
    case read, write, delete
}

/// Who may do what: bearer tokens from a tokens file, each with scopes. Without a tokens file
/// every request is allowed. The file can be reloaded (SIGHUP) without dropping connections.
public final class AccessPolicy: Sendable {
    /// Why a tokens file was refused.
    public struct TokensFileError: Error, CustomStringConvertible {
        public let description: String
    }

    private struct Entry: Sendable {
        /// SHA-256 of the token: comparisons run over fixed-size digests in constant time.
        let digest: [UInt8]
        let scopes: Set<Scope>
    }

    /// An S3 access key: its secret (needed to check HMAC signatures) and its scopes.
    public struct S3Key: Sendable {
        public let secret: String
        public let scopes: Set<Scope>
    }

    private struct Tokens: Sendable {
        var bearer: [Entry] = []
        var s3: [String: S3Key] = [:]
    }

    /// The tokens file, nil when access is open.
    public let tokensFile: String?
    /// GET, HEAD and the listing need no token.
    public let publicRead: Bool
    /// The proxies whose forwarded client address is believed (`--trusted-proxy`): in open
    /// access an upload counts against that address, not the proxy's.
    public let proxies: TrustedProxies
    private let tokens: Mutex<Tokens>

    /// Loads the tokens file (if any).
    public init(tokensFile: String?, publicRead: Bool, proxies: TrustedProxies = TrustedProxies()) throws(TokensFileError) {
        self.tokensFile = tokensFile
        self.publicRead = publicRead
        self.proxies = proxies
        self.tokens = Mutex(try tokensFile.map(Self.load) ?? Tokens())
    }

    /// Open access: no tokens file.
    public var isOpen: Bool { tokensFile == nil }

    /// Number of tokens loaded.
    public var tokenCount: Int { tokens.withLock { $0.bearer.count } }

    /// Number of S3 access keys loaded.
    public var s3KeyCount: Int { tokens.withLock { $0.s3.count } }

    /// The S3 access key `id`, if the tokens file has it.
    public func s3Key(_ id: String) -> S3Key? {
        tokens.withLock { $0.s3[id] }
    }

    /// Reads the tokens file again; on error the tokens in force stay as they were.
    public func reload() throws(TokensFileError) {
        guard let tokensFile else { return }
        let fresh = try Self.load(tokensFile)
        tokens.withLock { $0 = fresh }
    }

    /// Throws `.unauthorized` (no or unknown token) or `.forbidden` (token lacks `scope`). A
    /// request an anonymous caller may make is not authenticated at all (its token is not read).
    public func authorize(_ head: HTTPRequestHead, for scope: Scope) throws(HTTPError) {
        guard !allows(.anonymous, scope) else { return }
        let principal = try BearerAuthenticator(self).authenticate(head)
        guard principal != .anonymous else { throw .unauthorized("This request needs a bearer token.") }
        guard allows(principal, scope) else { throw .forbidden(scope.rawValue) }
    }

    /// The scopes of the bearer token whose SHA-256 is `digest`, nil if unknown. Every entry is
    /// compared, whatever matches, so timing does not tell which token is near.
    func bearerScopes(digest presented: [UInt8]) -> Set<Scope>? {
        var granted: Set<Scope>?
        for entry in tokens.withLock({ $0.bearer }) where Self.constantTimeEqual(entry.digest, presented) {
            granted = entry.scopes
        }
        return granted
    }

    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for i in a.indices { difference |= a[i] ^ b[i] }
        return difference == 0
    }

    /// Parses `TOKEN SCOPE[,SCOPE...]` lines and `s3 ACCESS_KEY_ID SECRET SCOPE[,SCOPE...]` lines
    /// (S3 access keys; `id` is the access key, `secret` its secret); `#` starts a comment.
    static func parse(_ text: String) throws(TokensFileError) -> [(token: String, secret: String?, scopes: Set<Scope>)] {
        var result: [(token: String, secret: String?, scopes: Set<Scope>)] = []
        for (number, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
            if fields.isEmpty { continue }
            let isS3 = fields[0] == "s3" && fields.count == 4
            guard fields.count == 2 || isS3 else {
                throw TokensFileError(description: "line \(number + 1): expected 'TOKEN SCOPE[,SCOPE...]' or 's3 ACCESS_KEY_ID SECRET SCOPE[,SCOPE...]'")
            }
            var scopes: Set<Scope> = []
            for name in fields[fields.count - 1].split(separator: ",", omittingEmptySubsequences: false) {
                guard let scope = Scope(rawValue: String(name)) else {
                    throw TokensFileError(description: "line \(number + 1): unknown scope '\(name)' (use read, write, delete)")
                }
                scopes.insert(scope)
            }
            if isS3 {
                result.append((String(fields[1]), String(fields[2]), scopes))
            } else {
                result.append((String(fields[0]), nil, scopes))
            }
        }
        return result
    }

    private static func load(_ path: String) throws(TokensFileError) -> Tokens {
        let data = try read(path)
        var tokens = Tokens()
        for line in try parse(String(decoding: data, as: UTF8.self)) {
            if let secret = line.secret {
                tokens.s3[line.token] = S3Key(secret: secret, scopes: line.scopes)
            } else {
                tokens.bearer.append(Entry(digest: SHA256Hasher.hash(Array(line.token.utf8)), scopes: line.scopes))
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

import HTTPCore
import Foundation

/// Everything blobd is started with: each flag, else its `BLOBD_*` variable, else the default.
struct Configuration: Sendable {
    var dataDirectory = "./data"
    var host = "127.0.0.1"
    var port: UInt16 = 8080
    /// Where the S3 dialect listens; nil for nowhere.
    var s3Listen: (host: String, port: UInt16)?
    var maxBlobSize: UInt64?
    var tokensFile: String?
    var publicRead = false
    var threads = ProcessInfo.processInfo.activeProcessorCount
    var uploadExpiry = 24 * 3600
    var minFreeBytes: UInt64 = 0
    /// Unfinished uploads per credential (or client address in open access); 0 for no limit.
    var maxOpenUploads = 1000
    var connectionTimeout = 60
    var maxConnections = 1024
    var headerTimeout = 10
    var minBodyRate = 1024
    var maxConnectionsPerIP = 128
    var trustedProxies: [NetworkRange] = []
    /// The outside URL of the /v1 listener, without a trailing slash; "" for relative links.
    var publicURL = ""
    /// Seconds requests in flight may take after SIGTERM/SIGINT before they are answered 503.
    var shutdownGrace = 10.0
    /// The PostgreSQL index shared by a cluster; nil for SQLite in the data directory.
    var indexURL: String?
    var nodeID = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "node"
    var reclaimGrace: Int64 = 900
    var databaseConnections = 16
    var logLevel = "info"
    var logFormat = "text"

    /// Why the configuration is unusable.
    struct Invalid: Error, CustomStringConvertible {
        let description: String
    }

    /// Reads `name` as a flag value, else from the environment as `BLOBD_NAME`.
    static func value(_ flag: String?, _ name: String, environment: [String: String]) -> String? {
        flag ?? environment["BLOBD_" + name.uppercased().replacingOccurrences(of: "-", with: "_")]
    }

    /// Parses `HOST:PORT` (see `SettingParsers.listen`).
    static func parseListen(_ text: String, _ name: String = "listen") throws -> (host: String, port: UInt16) {
        try SettingParsers.listen(text, name)
    }

    /// Parses a non-negative integer setting.
    static func parseNumber<T: FixedWidthInteger>(_ text: String, _ name: String, min: T = 0) throws -> T {
        guard let value = T(text), value >= min else {
            throw Invalid(description: "--\(name) must be an integer ≥ \(min), got '\(text)'")
        }
        return value
    }

    /// The slow-client limits, `--trusted-proxy` (each value may list several, comma-separated)
    /// and `--public-url` (an absolute http or https URL).
    mutating func resolveClientLimits(headerTimeout: String?, minBodyRate: String?, perIP: String?,
                                      trustedProxies: [String], publicURL: String?) throws {
        if let v = headerTimeout { self.headerTimeout = try SettingParsers.wholeSeconds(v, "header-timeout") }
        if let v = minBodyRate {
            guard let rate = Int(exactly: try SettingParsers.size(v, "min-body-rate")) else {
                throw Invalid(description: "--min-body-rate is too large, got '\(v)'")
            }
            self.minBodyRate = rate
        }
        if let v = perIP { maxConnectionsPerIP = try Self.parseNumber(v, "max-connections-per-ip") }
        for text in trustedProxies.flatMap({ $0.split(separator: ",") }) {
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            guard let range = NetworkRange(trimmed) else {
                throw Invalid(description: "--trusted-proxy must be an IP address or CIDR range (10.0.0.0/8, ::1), got '\(trimmed)'")
            }
            self.trustedProxies.append(range)
        }
        if let v = publicURL, !v.isEmpty {
            guard let url = URL(string: v), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host != nil,
                  url.query == nil, url.fragment == nil else {
                throw Invalid(description: "--public-url must be an http:// or https:// URL without a query, got '\(v)'")
            }
            self.publicURL = v.hasSuffix("/") ? String(v.dropLast()) : v
        }
    }

    /// Parses a boolean variable (`1`, `true`, `yes`, `on` or `0`, `false`, `no`, `off`).
    static func parseBool(_ text: String, _ name: String) throws -> Bool {
        switch text.lowercased() {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off", "": return false
        default: throw Invalid(description: "BLOBD_\(name.uppercased().replacingOccurrences(of: "-", with: "_")) must be true or false, got '\(text)'")
        }
    }
}

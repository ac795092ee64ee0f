import HTTPCore
import BlobStore
import Foundation
import PostgresClient
import TusHooks
import Observability
import Webhooks

/// Everything blobd is started with: each flag, else its `BLOBD_*` variable, else the default.
struct Configuration: Sendable {
    var dataDirectory = "./data"
    var host = "127.0.0.1"
    var port: UInt16 = 8080
    /// Where the S3 dialect listens; nil for nowhere.
    var s3Listen: (host: String, port: UInt16)?
    var maxBlobSize: UInt64?
    var tokensFile: String?
    /// `--bootstrap`: buckets, keys and anonymous grants applied at every start.
    var bootstrapFile: String?
    var publicRead = false
    /// `--no-ui`: no web page at /ui/.
    var noUI = false
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
    /// `--cors-origin` and `--cors-allow-credentials`.
    var cors = CORSSettings()
    /// Seconds requests in flight may take after SIGTERM/SIGINT before they are answered 503.
    var shutdownGrace = 10.0
    /// The PostgreSQL index shared by a cluster; nil for SQLite in the data directory.
    var indexURL: String?
    var nodeID = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "node"
    var reclaimGrace: Int64 = 900
    var databaseConnections = 16
    var logLevel = "info"
    var logFormat = "text"
    /// Seconds between the progress lines of fsck and migrate-index when stderr is no terminal
    /// (BLOBD_PROGRESS_INTERVAL).
    var progressInterval = 5.0
    /// The tests' own settings (BLOBD_TEST_*); nil in production.
    var testing: TestSettings?
    /// `--hook-url` and its events and timeout; nil for no blocking hooks.
    var hooks: HookSettings?
    /// `--notify-webhook` targets by name.
    var webhookTargets: [String: WebhookTarget] = [:]
    /// `--notify-retention`: seconds an undelivered event is retried before it is dropped.
    var notifyRetention = 7 * 86400

    /// The process's environment. Every subcommand's settings come through here: this is the
    /// one place blobd reads its environment.
    static var processEnvironment: [String: String] { ProcessInfo.processInfo.environment }

    /// What every subcommand reads alike: the data directory and the index (a flag, else its
    /// variable, else the default), the progress interval and the tests' settings. `serve`
    /// goes on with its own flags (`Serve.resolve`); fsck takes the index as it is given.
    static func common(dataDir: String?, index: String?, environment: [String: String] = processEnvironment) -> Configuration {
        var c = Configuration()
        if let v = value(dataDir, "data-dir", environment: environment) { c.dataDirectory = v }
        if let v = value(index, "index", environment: environment), v != "sqlite", !v.isEmpty { c.indexURL = v }
        if let v = environment["BLOBD_PROGRESS_INTERVAL"].flatMap(Double.init) { c.progressInterval = v }
        c.testing = TestSettings(environment: environment)
        return c
    }

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

/// Settings only the tests use (`BLOBD_TEST_*`: a step of a commit to crash at, a pause before
/// each commit or after each migrated batch). Read by the debug build the tests run and
/// compiled out of a release build, which has no way to crash or stall itself on purpose.
struct TestSettings: Sendable {
    var crashAt: CommitStep?
    var commitDelay = 0.0
    var migrationDelay = 0.0
    /// A step of an event's delivery to SIGKILL at (`EventDelivery.Step`).
    var eventCrashAt: String?
    /// Seconds of the first retry's wait, instead of 1.
    var eventBackoff: Double?
    /// Seconds of a delivery lease, instead of 30.
    var eventLease: Double?

    /// Nil when no test setting is given, and always in a release build.
    init?(environment: [String: String]) {
        #if DEBUG
        crashAt = environment["BLOBD_TEST_CRASH_AT"].flatMap(CommitStep.init)
        commitDelay = environment["BLOBD_TEST_COMMIT_DELAY"].flatMap(Double.init) ?? 0
        migrationDelay = environment["BLOBD_TEST_MIGRATION_DELAY"].flatMap(Double.init) ?? 0
        eventCrashAt = environment["BLOBD_TEST_EVENT_CRASH_AT"]
        eventBackoff = environment["BLOBD_TEST_EVENT_BACKOFF"].flatMap(Double.init)
        eventLease = environment["BLOBD_TEST_EVENT_LEASE"].flatMap(Double.init)
        if crashAt == nil && commitDelay <= 0 && migrationDelay <= 0 && eventCrashAt == nil && eventBackoff == nil && eventLease == nil {
            return nil
        }
        #else
        return nil
        #endif
    }
}

extension Serve {
    /// Flags first, then `BLOBD_*` variables, then defaults.
    func resolve(environment: [String: String] = Configuration.processEnvironment) throws -> Configuration {
        var c = Configuration.common(dataDir: dataDir, index: nil, environment: environment)
        func value(_ flag: String?, _ name: String) -> String? {
            Configuration.value(flag, name, environment: environment)
        }
        if let v = value(listen, "listen") { (c.host, c.port) = try SettingParsers.listen(v) }
        if let v = value(s3Listen, "s3-listen"), !v.isEmpty { c.s3Listen = try SettingParsers.listen(v, "s3-listen") }
        if let v = value(maxBlobSize, "max-blob-size") { c.maxBlobSize = try SettingParsers.size(v, "max-blob-size") }
        if let v = value(tokensFile, "tokens-file") { c.tokensFile = v }
        if let v = value(bootstrap, "bootstrap") { c.bootstrapFile = v }
        c.publicRead = try publicRead || Configuration.parseBool(environment["BLOBD_PUBLIC_READ"] ?? "", "public-read")
        c.noUI = try noUi || Configuration.parseBool(environment["BLOBD_NO_UI"] ?? "", "no-ui")
        if let v = value(uploadExpiry, "upload-expiry") { c.uploadExpiry = try SettingParsers.wholeSeconds(v, "upload-expiry", min: 1) }
        if let v = value(minFreeBytes, "min-free-bytes") { c.minFreeBytes = try SettingParsers.size(v, "min-free-bytes") }
        if let v = value(maxOpenUploads, "max-open-uploads") { c.maxOpenUploads = try Configuration.parseNumber(v, "max-open-uploads") }
        if let v = value(connectionTimeout, "connection-timeout") { c.connectionTimeout = try SettingParsers.wholeSeconds(v, "connection-timeout") }
        if let v = value(maxConnections, "max-connections") { c.maxConnections = try Configuration.parseNumber(v, "max-connections", min: 1) }
        try c.resolveClientLimits(headerTimeout: value(headerTimeout, "header-timeout"), minBodyRate: value(minBodyRate, "min-body-rate"),
                                  perIP: value(maxConnectionsPerIp, "max-connections-per-ip"),
                                  trustedProxies: trustedProxy.isEmpty ? environment["BLOBD_TRUSTED_PROXY"].map { [$0] } ?? [] : trustedProxy,
                                  publicURL: value(publicUrl, "public-url"))
        if let v = value(shutdownGrace, "shutdown-grace") {
            let seconds = try SettingParsers.duration(v, "shutdown-grace")
            guard seconds <= 3600 else {
                throw Configuration.Invalid(description: "--shutdown-grace must be at most 3600 seconds (1h), got '\(v)'")
            }
            c.shutdownGrace = seconds
        }
        try resolveCluster(&c, value)
        try resolveProcess(&c, value)
        try resolveCORS(&c, environment: environment)
        c.hooks = try resolveHooks(value, environment: environment)
        try c.resolveEvents(webhooks: notifyWebhook, secrets: notifySecret, retention: value(notifyRetention, "notify-retention"),
                            environment: environment)
        return c
    }

    /// --index, --node-id, --reclaim-grace, --db-connections.
    private func resolveCluster(_ c: inout Configuration, _ value: (String?, String) -> String?) throws {
        if let v = value(index, "index"), v != "sqlite", !v.isEmpty {
            guard v.hasPrefix("postgres://") || v.hasPrefix("postgresql://") else {
                throw Configuration.Invalid(description: "--index must be sqlite or a postgres:// URL, got '\(PostgresPool.redacted(v))'")
            }
            c.indexURL = v
        }
        if let v = value(nodeId, "node-id") {
            guard !v.isEmpty, v.utf8.count <= 64, v.allSatisfy({ $0.isLetter || $0.isNumber || "-_.".contains($0) }) else {
                throw Configuration.Invalid(description: "--node-id must be 1-64 letters, digits, '-', '_' or '.', got '\(v)'")
            }
            c.nodeID = v
        }
        if let v = value(reclaimGrace, "reclaim-grace") { c.reclaimGrace = Int64(try SettingParsers.wholeSeconds(v, "reclaim-grace")) }
        if let v = value(dbConnections, "db-connections") { c.databaseConnections = try Configuration.parseNumber(v, "db-connections", min: 1) }
    }

    /// --cors-origin (each an origin, `scheme://host[:port]`, with at most one `*`) and --cors-allow-credentials.
    private func resolveCORS(_ c: inout Configuration, environment: [String: String]) throws {
        let texts = corsOrigin.isEmpty ? environment["BLOBD_CORS_ORIGINS"].map { [$0] } ?? [] : corsOrigin
        for text in texts.flatMap({ $0.split(separator: ",") }) {
            let origin = text.trimmingCharacters(in: .whitespaces)
            guard origin == "*" || (origin.contains("://") && origin.filter({ $0 == "*" }).count <= 1 && !origin.hasSuffix("/")
                                    && origin.utf8.allSatisfy({ (0x21...0x7E).contains($0) })) else {
                throw Configuration.Invalid(description: "--cors-origin must be * or an origin such as https://app.example:8443 "
                                            + "(one * at most, no path), got '\(origin)'")
            }
            c.cors.origins.append(origin)
        }
        c.cors.allowCredentials = try corsAllowCredentials
            || Configuration.parseBool(environment["BLOBD_CORS_ALLOW_CREDENTIALS"] ?? "", "cors-allow-credentials")
    }

    /// --threads, --log-level, --log-format.
    private func resolveProcess(_ c: inout Configuration, _ value: (String?, String) -> String?) throws {
        if let v = value(threads, "threads") {
            c.threads = try Configuration.parseNumber(v, "threads", min: 1)
        }
        if let v = value(logLevel, "log-level") { c.logLevel = try SettingParsers.logLevel(v).rawValue }
        if let v = value(logFormat, "log-format") {
            guard v == "text" || v == "json" else {
                throw Configuration.Invalid(description: "--log-format must be text or json, got '\(v)'")
            }
            c.logFormat = v
        }
    }
}

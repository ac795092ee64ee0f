import ArgumentParser
import HTTPCore
import BlobStore
import Dispatch
import Foundation
import Logging
import PostgresClient
import MicroHTTPD
import Access
import Observability

@main
struct Blobd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blobd",
        abstract: "An HTTP blob service: one node on SQLite, or several on PostgreSQL and a shared file system.",
        discussion: """
            `blobd [flags]` serves; `blobd serve --help` lists its flags (--data-dir, --listen, --s3-listen, \
            --tokens-file, --index, --node-id, ...), each also a BLOBD_* variable.
            """,
        version: blobdVersion,
        subcommands: [Serve.self, CheckConfig.self, Fsck.self, MigrateIndex.self, KeyCommand.self],
        defaultSubcommand: Serve.self)

    /// ArgumentParser's `main`, but a usage error of `blobd key ...` exits 2, as its other
    /// usage errors do (a script tells them from a refusal, 1); the rest keep 64.
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        do {
            var command = try parseAsRoot(arguments)
            try command.run()
        } catch {
            if arguments.first == "key" && exitCode(for: error) == .validationFailure {
                printError(fullMessage(for: error))
                Foundation.exit(2)
            }
            exit(withError: error)
        }
    }
}

/// `blobd [flags]`: serve a data directory over HTTP.
struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve blobs over HTTP (the default command).")

    @Option(help: "Data directory (BLOBD_DATA_DIR; default ./data).") var dataDir: String?
    @Option(help: "HOST:PORT to listen on (a host name, or :PORT for every IPv4 address); port 0 picks a free port (BLOBD_LISTEN; default 127.0.0.1:8080).") var listen: String?
    @Option(help: "HOST:PORT for the S3 dialect (path style) over the same store (BLOBD_S3_LISTEN; default off).") var s3Listen: String?
    @Option(help: "Largest blob accepted: bytes, or 10G, 512MiB, 5GB (BLOBD_MAX_BLOB_SIZE; default no limit).") var maxBlobSize: String?
    @Option(help: "File of 'TOKEN GRANT[,GRANT...] [name=NAME]', 's3 ACCESS_KEY_ID SECRET GRANT[,...] [name=NAME]' and 'anonymous GRANT[,...]' lines (BLOBD_TOKENS_FILE; default open access).") var tokensFile: String?
    @Option(help: "JSON file of buckets, keys and anonymous grants applied at every start, before listening; closes open access (BLOBD_BOOTSTRAP).") var bootstrap: String?
    @Flag(help: "Let GET, HEAD and the listing through without a token (BLOBD_PUBLIC_READ).") var publicRead = false
    @Flag(name: .customLong("no-ui"), help: "Serve no web page at /ui/ (BLOBD_NO_UI).") var noUi = false
    @Option(help: "Worker threads (BLOBD_THREADS; default the number of cores).") var threads: String?
    @Option(help: "How long an idle resumable upload is kept: seconds, or 30m, 24h, 7d (BLOBD_UPLOAD_EXPIRY; default 24h).") var uploadExpiry: String?
    @Option(help: "Refuse writes that would leave less free space than this: bytes, or 1G (BLOBD_MIN_FREE_BYTES).") var minFreeBytes: String?
    @Option(help: "Unfinished uploads (tus and S3 multipart) one token or access key, or in open access one client address, may have; 0 for no limit (BLOBD_MAX_OPEN_UPLOADS; default 1000).") var maxOpenUploads: String?
    @Option(help: "Seconds before an idle or stalled connection is closed (BLOBD_CONNECTION_TIMEOUT; default 60).") var connectionTimeout: String?
    @Option(help: "Connections served at once (BLOBD_MAX_CONNECTIONS; default 1024).") var maxConnections: String?
    @Option(help: "Seconds a request head may take, also the keep-alive idle limit; 0 for none (BLOBD_HEADER_TIMEOUT; default 10).") var headerTimeout: String?
    @Option(help: "Bytes per second a request body must average over each --header-timeout period; 0 for none (BLOBD_MIN_BODY_RATE; default 1024).") var minBodyRate: String?
    @Option(help: "Connections one client address may hold; 0 for no limit (BLOBD_MAX_CONNECTIONS_PER_IP; default 128).") var maxConnectionsPerIp: String?
    @Option(help: "A proxy (CIDR or address) whose X-Forwarded-For/Forwarded names the client; repeatable (BLOBD_TRUSTED_PROXY, comma-separated).") var trustedProxy: [String] = []
    @Option(help: "The URL clients reach blobd at, for Location headers (BLOBD_PUBLIC_URL; default relative links).") var publicUrl: String?
    @Option(help: "An origin browsers may call blobd from (https://app.example), or * for any; repeatable. A bucket's own CORS rules replace these for its keys (BLOBD_CORS_ORIGINS, comma-separated; default none).") var corsOrigin: [String] = []
    @Flag(help: "Let browsers send credentials (cookies, Authorization) cross-origin: the origin is echoed, never * (BLOBD_CORS_ALLOW_CREDENTIALS).") var corsAllowCredentials = false
    @Option(help: "Seconds requests in flight may take after SIGTERM or SIGINT; then those still waiting get 503 (BLOBD_SHUTDOWN_GRACE; default 10).") var shutdownGrace: String?
    @Option(help: "trace, debug, info, notice, warn(ing), err(or) or crit(ical) (BLOBD_LOG_LEVEL; default info).") var logLevel: String?
    @Option(help: "text or json (BLOBD_LOG_FORMAT; default text).") var logFormat: String?
    @Option(help: "Index: sqlite (in the data dir), or a postgres:// URL shared by several nodes on one shared data dir (BLOBD_INDEX; default sqlite).") var index: String?
    @Option(help: "This node's name in a cluster (BLOBD_NODE_ID; default the host name).") var nodeId: String?
    @Option(help: "In a cluster, seconds before files of replaced or deleted versions are unlinked (BLOBD_RECLAIM_GRACE; default 900).") var reclaimGrace: String?
    @Option(help: "PostgreSQL connections per node (BLOBD_DB_CONNECTIONS; default 16).") var dbConnections: String?
    @Option(help: "http:// URL of a blocking hook that takes tusd's hook requests (BLOBD_HOOK_URL; default none).") var hookUrl: String?
    @Option(help: "The hooks sent to --hook-url: pre-create, pre-finish, comma-separated (BLOBD_HOOK_EVENTS; default both).") var hookEvents: String?
    @Option(help: "How long a hook may take before the request gets 503: seconds, or 500ms (BLOBD_HOOK_TIMEOUT; default 5s).") var hookTimeout: String?
    @Flag(help: "Tell the hook the client's credentials too (Authorization, cookies, presigned signatures, share link ids), which are left out by default (BLOBD_HOOK_FORWARD_CREDENTIALS).") var hookForwardCredentials = false
    @Option(help: "NAME=URL: an http:// webhook that bucket subscriptions may send events to; repeatable (BLOBD_NOTIFY_WEBHOOK_<NAME>=URL).") var notifyWebhook: [String] = []
    @Option(help: "NAME=whsec_...: sign NAME's deliveries as Standard Webhooks do; repeatable (BLOBD_NOTIFY_SECRET_<NAME>).") var notifySecret: [String] = []
    @Option(help: "How long an undelivered event is retried before it is dropped: 90s, 24h, 7d (BLOBD_NOTIFY_RETENTION; default 7d).") var notifyRetention: String?

    func run() throws {
        let configuration: Configuration
        let access: AccessPolicy
        do {
            configuration = try resolve()
            access = try Self.accessPolicy(configuration)
        } catch let invalid as Configuration.Invalid {
            throw ValidationError(invalid.description)  // exit 64: a setting that will not fix itself
        }
        let level = Logger.Level(rawValue: configuration.logLevel) ?? .info
        Announcement.json = configuration.logFormat == "json"
        if configuration.logFormat == "json" {
            LoggingSystem.bootstrap { JSONLogHandler(label: $0, logLevel: level) }
        } else {
            LoggingSystem.bootstrap { TextLogHandler(label: $0, logLevel: level) }
        }
        try BlobdServer.run(configuration, access: access)
    }

    /// The tokens file's policy; a missing, unreadable, malformed or exposed file is a setting
    /// that will not fix itself.
    static func accessPolicy(_ configuration: Configuration) throws -> AccessPolicy {
        do {
            return try AccessPolicy(tokensFile: configuration.tokensFile, publicRead: configuration.publicRead,
                                    proxies: TrustedProxies(configuration.trustedProxies),
                                    closed: configuration.bootstrapFile != nil)
        } catch {
            throw Configuration.Invalid(description: "--tokens-file: \(error)")
        }
    }
}

import ArgumentParser
import BlobdHandlers
import HTTPCore
import BlobStore
import Webhooks
import CatalogPostgres
import CatalogSQLite
import Dispatch
import Foundation
import Logging
import MicroHTTPD
import PostgresClient
import Access
import Observability

/// Starting, running and stopping the server process.
enum BlobdServer {
    /// Opens the store, serves until SIGTERM or SIGINT, then stops every service in reverse
    /// order (the listeners drain within the grace period) and returns.
    static func run(_ configuration: Configuration, access: AccessPolicy) throws -> Never {
        blockSignals()
        let logger = Logger(label: "blobd")
        let plan = configuration.bootstrapFile.map { loadBootstrap($0, targets: Set(configuration.webhookTargets.keys)) }
        let store = openStore(configuration, logger: logger)
        openKeys(store, access: access, bootstrap: plan, logger: logger)
        logAccess(access, logger: logger)
        let node = BlobdNode(store: store, access: access, handlers: handlerSettings(configuration, logger: logger),
                             settings: nodeSettings(configuration), logger: logger)
        do {
            try node.start()
        } catch {
            fail("blobd: \(error)")
        }
        if configuration.s3Listen != nil && access.isOpen {
            logger.warning("S3 dialect in open access: signatures are not checked; add 's3 ACCESS_KEY_ID SECRET SCOPES' lines to a tokens file")
        }
        announce(configuration, node: node)
        serveUntilStopped(configuration, node: node, access: access, logger: logger)
        // Every service has stopped; the catalog stays open to the end. Closing SQLite
        // checkpoints its WAL, which on a full disk half-writes the database file, and the next
        // start then cannot open it. Every acknowledged commit is durable in the WAL already.
        withExtendedLifetime(store) { exit(0) }
    }

    /// The store the configuration names, opened; exits with a message when it cannot be.
    private static func openStore(_ configuration: Configuration, logger: Logger) -> BlobStore {
        var options = BlobStoreOptions(maxBlobSize: configuration.maxBlobSize, minFreeBytes: configuration.minFreeBytes)
        options.commitHooks = configuration.testing?.commitHooks  // crash and takeover tests only
        options.maxOpenUploads = configuration.maxOpenUploads
        options.uploadExpiry = Int64(configuration.uploadExpiry)
        var catalog = CatalogOpener.sqlite
        if let url = configuration.indexURL {
            catalog = .postgres(url: url, connections: configuration.databaseConnections)
            options.nodeID = configuration.nodeID
            options.reclaimGrace = configuration.reclaimGrace
            logger.info("Cluster node", metadata: ["node.id": "\(configuration.nodeID)", "index": "\(PostgresPool.redacted(url))",
                                                    "reclaim_grace_s": .stringConvertible(configuration.reclaimGrace)])
        }
        do {
            return try BlobStore(directory: configuration.dataDirectory, catalog: catalog, options: options, logger: logger)
        } catch StoreError.dataDirectoryLocked(let path) {
            fail("blobd: the data directory \(path) is in use by another blobd (lock file \(path)/lock); stop it first"
                 + (configuration.indexURL == nil ? "" : ", or give this node another --node-id"))
        } catch StoreError.index(.unavailable(let message)) where configuration.indexURL != nil {
            fail("blobd: cannot reach the PostgreSQL index \(PostgresPool.redacted(configuration.indexURL ?? "")): \(message)")
        } catch {
            fail("blobd: cannot open the data directory \(configuration.dataDirectory): \(error)")
        }
    }

    /// The exit status of a bad bootstrap file: 2, as the API contract says (the systemd unit
    /// does not restart on it, as on 64 for every other setting that will not fix itself).
    static let badBootstrapStatus: Int32 = 2

    /// The bootstrap file, checked; a bad one stops blobd (exit 2) before anything is applied.
    private static func loadBootstrap(_ path: String, targets: Set<String>) -> BootstrapPlan {
        do throws(Bootstrap.Invalid) {
            return try Bootstrap.checkTargets(Bootstrap.load(path), targets: targets)
        } catch {
            Announcement.write("blobd: --bootstrap \(path): \(error); nothing was applied", level: .critical)
            exit(badBootstrapStatus)
        }
    }

    /// Applies the bootstrap plan (one transaction), then serves the catalog's keys.
    private static func openKeys(_ store: BlobStore, access: AccessPolicy, bootstrap plan: BootstrapPlan?, logger: Logger) {
        do throws(StoreError) {
            if let plan {
                refuseSuspendingLockedBuckets(plan, stored: try store.catalog.access.bucketAccess())
                // The buckets whose lifecycle rules it changes get their blobs' new deadlines.
                try store.settings.apply(plan)
                logger.info("Bootstrap applied", metadata: ["buckets.count": .stringConvertible(plan.buckets.count),
                                                            "keys.count": .stringConvertible(plan.keys.count)])
            }
            try access.directory.attach(store.catalog.access, settings: store.settings)
        } catch StoreError.keyConflict(let detail) {
            Announcement.write("blobd: --bootstrap: another key has the \(detail); nothing was applied", level: .critical)
            exit(badBootstrapStatus)
        } catch {
            fail("blobd: cannot read the keys of the index: \(error)")
        }
    }

    /// Stops blobd (exit 64, nothing applied) when the plan would suspend the versioning of a
    /// bucket the catalog has with Object Lock.
    private static func refuseSuspendingLockedBuckets(_ plan: BootstrapPlan, stored: [BucketAccessSetting]) {
        do throws(Bootstrap.Invalid) {
            try Bootstrap.checkVersioning(plan, stored: stored)
        } catch {
            Announcement.write("blobd: --bootstrap: \(error); nothing was applied", level: .critical)
            exit(badBootstrapStatus)
        }
    }

    /// Says at start whether requests need tokens, and how many there are.
    private static func logAccess(_ access: AccessPolicy, logger: Logger) {
        if access.isOpen {
            logger.warning("No tokens file: every request is allowed (open access); use --tokens-file to require tokens")
        } else {
            logger.info("Tokens loaded", metadata: ["tokens.count": .stringConvertible(access.tokenCount), "s3_keys.count": .stringConvertible(access.s3KeyCount),
                                                    "public_read": .stringConvertible(access.publicRead)])
        }
    }

    /// What the handlers of both listeners are started with.
    private static func handlerSettings(_ configuration: Configuration, logger: Logger) -> BlobdHandlers.Settings {
        BlobdHandlers.Settings(
            version: blobdVersion, node: configuration.indexURL == nil ? nil : configuration.nodeID,
            uploadLifetime: Int64(configuration.uploadExpiry), publicURL: configuration.publicURL,
            accessLog: logger.logLevel <= .info ? (configuration.logFormat == "json" ? .json : .text) : nil,
            trustedProxies: configuration.trustedProxies, webUI: !configuration.noUI, hooks: configuration.hooks,
            cors: configuration.cors, events: EventRouter.Settings(targets: Set(configuration.webhookTargets.keys),
                                                                   node: configuration.nodeID))
    }

    /// The node's listeners and services. Expired resumable uploads are swept at start and then
    /// periodically; expired blobs every 2 seconds (`BlobStore.removeExpiredBlobs`).
    private static func nodeSettings(_ configuration: Configuration) -> BlobdNode.Settings {
        func listener(_ host: String, _ port: UInt16) -> HTTPServerConfiguration {
            HTTPServerConfiguration(host: host, port: port, threads: configuration.threads,
                                    connectionTimeout: configuration.connectionTimeout, maxConnections: configuration.maxConnections,
                                    headerTimeout: Double(configuration.headerTimeout), minBodyRate: configuration.minBodyRate,
                                    maxConnectionsPerAddress: configuration.maxConnectionsPerIP)
        }
        var settings = BlobdNode.Settings(listener: listener(configuration.host, configuration.port),
                                          s3Listener: configuration.s3Listen.map { listener($0.0, $0.1) },
                                          uploadSweepInterval: Double(max(1, min(60, configuration.uploadExpiry / 2))))
        settings.webhooks = configuration.webhookTargets
        settings.node = configuration.nodeID
        settings.notifyRetention = configuration.notifyRetention
        if let testing = configuration.testing {
            settings.delivery = EventDelivery.Tuning(crashAt: testing.eventCrashAt.flatMap(EventDelivery.Step.init),
                                                     firstBackoff: testing.eventBackoff, lease: testing.eventLease)
        }
        return settings
    }

    /// Writes where blobd listens (the line that scripts and tests wait for).
    private static func announce(_ configuration: Configuration, node: BlobdNode) {
        Announcement.write("blobd listening on http://\(address(configuration.host, node.port ?? 0))")
        if let s3Port = node.s3Port, let (host, _) = configuration.s3Listen {
            Announcement.write("blobd S3 listening on http://\(address(host, s3Port))")
        }
    }

    /// `HOST:PORT`, an IPv6 literal in brackets.
    static func address(_ host: String, _ port: UInt16) -> String {
        (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
    }

    /// Reloads tokens on SIGHUP; on SIGTERM or SIGINT stops the node (its listeners drain
    /// within the grace period, then every other service in reverse order) and returns.
    private static func serveUntilStopped(_ configuration: Configuration, node: BlobdNode, access: AccessPolicy, logger: Logger) {
        // The main thread waits for signals; every other thread has them blocked (see `blockSignals`).
        while true {
            switch waitForSignal() {
            case SIGHUP:
                do {
                    try access.reload()
                    logger.info("Tokens reloaded", metadata: ["tokens.count": .stringConvertible(access.tokenCount)])
                } catch {
                    logger.error("Tokens file not reloaded; the previous tokens stay in force", metadata: ["error": "\(error)"])
                }
            case let number:
                logger.info("Shutting down", metadata: ["signal": .stringConvertible(number), "requests.inflight": .stringConvertible(node.requestsInFlight)])
                node.stop(grace: configuration.shutdownGrace, logger: logger)
                return
            }
        }
    }

    /// Signals blobd handles synchronously on its main thread.
    private static let handledSignals = [SIGTERM, SIGINT, SIGHUP]

    /// Blocks the handled signals in the calling thread, and so in every thread started after:
    /// they are then delivered only to `waitForSignal()`. Call before any thread is started.
    static func blockSignals() {
        signal(SIGPIPE, SIG_IGN)
        var set = signalSet(handledSignals)
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    private static func waitForSignal() -> Int32 {
        var set = signalSet(handledSignals)
        var number: Int32 = 0
        while sigwait(&set, &number) != 0 {}
        return number
    }

    private static func fail(_ message: String) -> Never {
        Announcement.write(message, level: .critical)
        exit(1)
    }
}

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
    /// Opens the store, serves until SIGTERM or SIGINT, drains and exits 0.
    static func run(_ configuration: Configuration, access: AccessPolicy) throws -> Never {
        blockSignals()
        let logger = Logger(label: "blobd")
        let plan = configuration.bootstrapFile.map { loadBootstrap($0, targets: Set(configuration.webhookTargets.keys)) }
        let store = openStore(configuration, logger: logger)
        openKeys(store, access: access, bootstrap: plan, logger: logger)
        logAccess(access, logger: logger)
        let (server, s3Server, commitPools, metrics) = startServers(configuration, store: store, access: access, logger: logger)
        if !configuration.webhookTargets.isEmpty {
            EventDelivery(outbox: store.catalog.events, targets: configuration.webhookTargets, node: configuration.nodeID,
                          retention: configuration.notifyRetention, metrics: metrics.events, logger: logger,
                          testing: configuration.testing).start()
        }
        // Expired resumable uploads are swept at start and then periodically; expired blobs
        // every 2 seconds (`BlobStore.removeExpiredBlobs`).
        let sweeper = startSweeper(store, interval: max(1, min(60, configuration.uploadExpiry / 2)))
        let expirySweeper = startExpirySweeper(store)
        announce(configuration, server: server, s3Server: s3Server)
        serveUntilStopped(configuration, store: store, sweeper: sweeper, server: server, s3Server: s3Server,
                          commitPools: commitPools, access: access, logger: logger, keeping: expirySweeper)
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

    /// The exit status of a bad bootstrap file: EX_USAGE, as for every setting that will not fix
    /// itself (the systemd unit does not restart on it).
    static let badBootstrapStatus: Int32 = 64

    /// The bootstrap file, checked; a bad one stops blobd (exit 64) before anything is applied.
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

    /// The /v1 listener and, with `--s3-listen`, the S3 one, started, and their commit pools;
    /// exits with a message when one cannot start.
    private static func startServers(_ configuration: Configuration, store: BlobStore, access: AccessPolicy,
                                     logger: Logger) -> (HTTPServer, HTTPServer?, [BlockingPool], Metrics) {
        let handlers = BlobdHandlers(store: store, access: access, settings: BlobdHandlers.Settings(
            version: blobdVersion, node: configuration.indexURL == nil ? nil : configuration.nodeID,
            uploadLifetime: Int64(configuration.uploadExpiry), publicURL: configuration.publicURL,
            accessLog: logger.logLevel <= .info ? (configuration.logFormat == "json" ? .json : .text) : nil,
            trustedProxies: configuration.trustedProxies, webUI: !configuration.noUI, hooks: configuration.hooks,
            cors: configuration.cors, events: EventRouter.Settings(targets: Set(configuration.webhookTargets.keys),
                                                                   node: configuration.nodeID)), logger: logger)
        let metrics = handlers.metrics
        func serverConfiguration(_ host: String, _ port: UInt16) -> HTTPServerConfiguration {
            HTTPServerConfiguration(host: host, port: port, threads: configuration.threads,
                                    connectionTimeout: configuration.connectionTimeout, maxConnections: configuration.maxConnections,
                                    headerTimeout: Double(configuration.headerTimeout), minBodyRate: configuration.minBodyRate,
                                    maxConnectionsPerAddress: configuration.maxConnectionsPerIP,
                                    slowClientClosed: { metrics.recordSlowClientClosed(reason: $0) })
        }
        do {
            var commitPools = [handlers.v1.committers]
            let server = try HTTPServer(
                configuration: serverConfiguration(configuration.host, configuration.port),
                handler: handlers.v1)
            var s3Server: HTTPServer?
            if let (host, port) = configuration.s3Listen {
                let s3 = handlers.makeS3()
                commitPools.append(s3.committers)
                s3Server = try HTTPServer(configuration: serverConfiguration(host, port), handler: s3)
                if access.isOpen {
                    logger.warning("S3 dialect in open access: signatures are not checked; add 's3 ACCESS_KEY_ID SECRET SCOPES' lines to a tokens file")
                }
            }
            return (server, s3Server, commitPools, metrics)
        } catch {
            fail("blobd: \(error)")
        }
    }

    /// Sweeps expired uploads and reclaims garbage now and every `interval` seconds.
    private static func startSweeper(_ store: BlobStore, interval: Int) -> any DispatchSourceTimer {
        let sweeper = DispatchSource.makeTimerSource(queue: .global())
        sweeper.schedule(deadline: .now(), repeating: .seconds(interval))
        sweeper.setEventHandler {
            store.removeExpiredUploads()
            store.removeExpiredMultipartUploads()
            store.reclaimGarbage()
        }
        sweeper.resume()
        return sweeper
    }

    /// Deletes blobs past their deadline, and versions and delete markers their bucket's rules
    /// remove, now and every 2 seconds, in bounded batches through the index on the deadline; in
    /// a cluster one node at a time does (the others' passes skip).
    private static func startExpirySweeper(_ store: BlobStore) -> any DispatchSourceTimer {
        let sweeper = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "blobd.expiry"))
        sweeper.schedule(deadline: .now(), repeating: .seconds(2))
        sweeper.setEventHandler {
            store.removeExpiredBlobs()
            store.removeExpiredVersions()
        }
        sweeper.resume()
        return sweeper
    }

    /// Writes where blobd listens (the line that scripts and tests wait for).
    private static func announce(_ configuration: Configuration, server: HTTPServer, s3Server: HTTPServer?) {
        Announcement.write("blobd listening on http://\(address(configuration.host, server.port))")
        if let s3Server, let (host, _) = configuration.s3Listen {
            Announcement.write("blobd S3 listening on http://\(address(host, s3Server.port))")
        }
    }

    /// `HOST:PORT`, an IPv6 literal in brackets.
    static func address(_ host: String, _ port: UInt16) -> String {
        (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
    }

    /// Reloads tokens on SIGHUP; on SIGTERM or SIGINT drains both listeners and exits 0.
    private static func serveUntilStopped(_ configuration: Configuration, store: BlobStore, sweeper: any DispatchSourceTimer,
                                          server: HTTPServer, s3Server: HTTPServer?, commitPools: [BlockingPool],
                                          access: AccessPolicy, logger: Logger, keeping expirySweeper: any DispatchSourceTimer) -> Never {
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
                logger.info("Shutting down", metadata: ["signal": .stringConvertible(number), "requests.inflight": .stringConvertible(server.requestsInFlight)])
                // Both listeners stop accepting at once and share the grace period.
                s3Server?.quiesce()
                let deadline = Date().addingTimeInterval(configuration.shutdownGrace)
                server.shutdown(grace: configuration.shutdownGrace)
                s3Server?.shutdown(grace: max(0, deadline.timeIntervalSinceNow))
                // Commits still running finish within what is left of the grace period; those
                // that do not are unacknowledged, and recovery undoes them at the next start.
                let drained = commitPools.allSatisfy { $0.shutdown(waitingAtMost: deadline.timeIntervalSinceNow) }
                if !drained { logger.warning("Commits still running at the end of the grace period are abandoned") }
                store.markStoppedCleanly()
                logger.info("Stopped")
                LogOutput.standardError.flush()
                expirySweeper.cancel()
                withExtendedLifetime((store, sweeper, expirySweeper)) {}
                exit(0)
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

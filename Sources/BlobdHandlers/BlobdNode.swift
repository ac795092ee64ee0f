import Access
import BlobStore
import Logging
import MicroHTTPD
import Observability
import Services
import Webhooks

/// One blobd node: its handlers and every service it runs, in one `ServiceGroup`. The
/// executable starts one from its configuration and stops it on SIGTERM; the in-process tests
/// start one on port 0 the same way.
///
/// Started in this order and stopped in reverse: the log's flusher, the store's clean-stop
/// mark, the store's background restamps, the key poll, the commit pools, the sweeps, event delivery, the listeners, and last the
/// quiesce of both listeners, so that on stop both stop accepting at once and share the grace.
public final class BlobdNode: Sendable {
    /// What a node is started with, beside the store, the access policy and the handlers' settings.
    public struct Settings: Sendable {
        /// The /v1 listener (port 0: any free port).
        public var listener: HTTPServerConfiguration
        /// The S3 listener, if any.
        public var s3Listener: HTTPServerConfiguration?
        /// Seconds between sweeps of expired uploads and garbage.
        public var uploadSweepInterval: Double
        /// Seconds between expiry sweeps of blobs and versions.
        public var expirySweepInterval: Double = 2
        /// Seconds between polls of the catalog's access version (keys and bucket settings).
        public var keyPollInterval: Double = 1
        /// Webhook targets by name; none: no delivery loop.
        public var webhooks: [String: WebhookTarget] = [:]
        /// This node's name in events and leases.
        public var node: String = "blobd"
        /// Seconds an event may wait before it is dropped.
        public var notifyRetention: Int = 86_400
        /// A test's faster delivery loop, or its crash step.
        public var delivery = EventDelivery.Tuning()
        /// The log output flushed last, if any.
        public var log: LogOutput? = .standardError

        public init(listener: HTTPServerConfiguration, s3Listener: HTTPServerConfiguration? = nil, uploadSweepInterval: Double = 60) {
            self.listener = listener
            self.s3Listener = s3Listener
            self.uploadSweepInterval = uploadSweepInterval
        }
    }

    public let handlers: BlobdHandlers
    public let store: BlobStore
    private let group = ServiceGroup()
    private let v1Listener: Listener
    private let s3Listener: Listener?
    private let drains: [PoolDrain]

    /// Wires the node's services; nothing runs until `start`.
    public init(store: BlobStore, access: AccessPolicy, handlers handlerSettings: BlobdHandlers.Settings, settings: Settings,
                logger: Logger) {
        self.store = store
        let handlers = BlobdHandlers(store: store, access: access, settings: handlerSettings, logger: logger)
        self.handlers = handlers
        let metrics = handlers.metrics
        var v1Configuration = settings.listener
        v1Configuration.slowClientClosed = { metrics.recordSlowClientClosed(reason: $0) }
        v1Listener = Listener("blobd-v1", v1Configuration, handler: handlers.v1)
        var pools = [handlers.v1.committers]
        if var s3Configuration = settings.s3Listener {
            s3Configuration.slowClientClosed = { metrics.recordSlowClientClosed(reason: $0) }
            let s3 = handlers.makeS3()
            pools.append(s3.committers)
            s3Listener = Listener("blobd-s3", s3Configuration, handler: s3)
        } else {
            s3Listener = nil
        }
        if let log = settings.log { group.add(log) }
        group.add(CleanStop(store))
        group.add(PoolDrain(store.background, name: "blobd-restamp"))
        group.add(PeriodicTask("blobd-keys", every: settings.keyPollInterval, runsAtStart: false) { access.directory.poll() })
        drains = pools.map { PoolDrain($0) }
        for drain in drains { group.add(drain) }
        group.add(PeriodicTask("blobd-sweep", every: settings.uploadSweepInterval) {
            store.removeExpiredUploads()
            store.removeExpiredMultipartUploads()
            store.reclaimGarbage()
        })
        group.add(PeriodicTask("blobd-expiry", every: settings.expirySweepInterval) {
            store.removeExpiredBlobs()
            store.removeExpiredVersions()
        })
        if !settings.webhooks.isEmpty {
            group.add(EventDelivery(outbox: store.catalog.events, targets: settings.webhooks, node: settings.node,
                                    retention: settings.notifyRetention, metrics: metrics.events, logger: logger,
                                    version: handlerSettings.version, clock: store.options.clock, tuning: settings.delivery))
        }
        group.add(v1Listener)
        if let s3Listener { group.add(s3Listener) }
        group.add(Quiesce([v1Listener] + (s3Listener.map { [$0] } ?? [])))
    }

    /// Starts every service in order; if one cannot start, those started are stopped again.
    public func start() throws {
        try group.start()
    }

    /// Stops every service in reverse order: the listeners stop accepting at once and drain
    /// for `grace` seconds together, commits in flight finish within what is left of it (those
    /// that do not are unacknowledged, and recovery undoes them at the next start).
    public func stop(grace: Double, logger: Logger? = nil) {
        group.stop(before: .now + .milliseconds(Int64(max(0, min(grace, 86_400)) * 1000)))
        if drains.contains(where: \.abandonedCommits) {
            logger?.warning("Commits still running at the end of the grace period are abandoned")
        }
        logger?.info("Stopped")
    }

    /// The /v1 listener's port (once started).
    public var port: UInt16? { v1Listener.port }

    /// The S3 listener's port (once started), if it has one.
    public var s3Port: UInt16? { s3Listener?.port }

    /// Requests in flight on the /v1 listener.
    public var requestsInFlight: Int { v1Listener.requestsInFlight }

    /// The services, in start order (for the log and the tests).
    public var serviceNames: [String] { group.names }
}

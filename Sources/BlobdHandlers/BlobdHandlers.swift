import BlobAPIv1
import HTTPCore
import BlobS3
import BlobStore
import Logging
import MicroHTTPD
import Access
import Observability
import TusHooks
import Webhooks

/// The handlers of blobd's listeners, wired the one way the `blobd` executable and the
/// in-process tests both use: the /v1 `BlobService` and the S3 `S3Service` over one store,
/// one access policy and one set of metrics.
public final class BlobdHandlers: Sendable {
    /// What the handlers are started with, beside the store and the access policy.
    public struct Settings: Sendable {
        /// The version the metrics report.
        public var version: String
        /// This node's id in a cluster (a metrics label), nil on a single node.
        public var node: String?
        /// Seconds a tus upload lives without a PATCH.
        public var uploadLifetime: Int64
        /// `--public-url`: put before every `Location`; "" for relative references.
        public var publicURL: String
        /// The access log's format; nil for no access log.
        public var accessLog: AccessLog.Format?
        /// Peers whose `Forwarded` / `X-Forwarded-For` the access log believes.
        public var trustedProxies: [NetworkRange]
        /// `--cors-origin` and `--cors-allow-credentials`.
        public var cors: CORSSettings
        /// tusd's blocking hooks (`--hook-url`); nil for none.
        public var hooks: HookSettings?
        /// Whether /ui/ serves the web page (`--no-ui` turns it off).
        public var webUI: Bool
        /// The webhook targets events may go to, and this node's name in them.
        public var events: EventRouter.Settings

        public init(version: String, node: String? = nil, uploadLifetime: Int64 = 24 * 3600, publicURL: String = "",
                    accessLog: AccessLog.Format? = nil, trustedProxies: [NetworkRange] = [], webUI: Bool = true,
                    hooks: HookSettings? = nil, cors: CORSSettings = CORSSettings(),
                    events: EventRouter.Settings = EventRouter.Settings(targets: [], node: "blobd")) {
            self.events = events
            self.cors = cors
            self.hooks = hooks
            self.webUI = webUI
            self.version = version
            self.node = node
            self.uploadLifetime = uploadLifetime
            self.publicURL = publicURL
            self.accessLog = accessLog
            self.trustedProxies = trustedProxies
        }
    }

    public let metrics: Metrics
    /// The /v1 and tus handler.
    public let v1: BlobService
    private let store: BlobStore
    private let access: AccessPolicy
    private let logger: Logger
    private let accessLog: AccessLog?
    private let cors: CORSSettings
    private let hooks: BlockingHooks?
    /// Which changes the buckets' subscriptions want events of, for both dialects.
    public let events: EventRouter

    public init(store: BlobStore, access: AccessPolicy, settings: Settings, logger: Logger) {
        self.store = store
        self.access = access
        self.logger = logger
        cors = settings.cors
        metrics = Metrics(version: settings.version, node: settings.node)
        accessLog = settings.accessLog.map { AccessLog(format: $0, proxies: TrustedProxies(settings.trustedProxies)) }
        hooks = settings.hooks.map { BlockingHooks($0, logger: logger) }
        events = EventRouter(store.settings)
        events.configure(settings.events)
        v1 = BlobService(store: store, access: access, metrics: metrics, uploadLifetime: settings.uploadLifetime,
                         logger: logger, accessLog: accessLog, publicURL: settings.publicURL,
                         webUI: settings.webUI ? WebUI(version: settings.version, node: settings.node) : nil, hooks: hooks,
                         events: events, cors: settings.cors)
        // Each blob the sweep removes gets its LifecycleExpiration:Delete event (DeleteMarkerCreated in a
        // versioned bucket), if a subscription wants it.
        store.setExpiryEvents { [events] name, key in
            events.draft(name, key: key, principal: "blobd", dialect: "lifecycle")
        }
    }

    /// The S3 handler over the same store; made on demand, as only `--s3-listen` needs one
    /// (it starts its own commit threads).
    public func makeS3() -> S3Service {
        S3Service(store: store, access: access, metrics: metrics, logger: logger, accessLog: accessLog, hooks: hooks, events: events, cors: cors)
    }
}

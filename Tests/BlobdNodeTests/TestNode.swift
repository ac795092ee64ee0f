import Access
import Foundation
import BlobdHandlers
import BlobStore
import HTTPTesting
import LiveBlobd
import Logging
import MicroHTTPD
import TusHooks
import Webhooks

/// A `BlobdNode` started in this process as `blobd serve` starts one, on 127.0.0.1 port 0 and
/// a fresh temporary data directory; stopped by the test or when released.
final class TestNode: Sendable {
    let node: BlobdNode
    let v1: TestClient
    let directory: TempDir

    /// What a test changes of a node.
    struct Options {
        var clock: WallClock = .system
        /// The tokens file's contents; nil for open access.
        var tokens: String?
        var webhooks: [String: WebhookTarget] = [:]
        var hooks: HookSettings?
    }

    init(_ options: Options = Options()) throws {
        directory = TempDir("blobd-node")
        let logger = Logger(label: "blobd") { _ in SwiftLogNoOpLogHandler() }
        var storeOptions = BlobStoreOptions()
        storeOptions.clock = options.clock
        let store = try BlobStore(directory: directory.path + "/data", catalog: .sqlite, options: storeOptions, logger: logger)
        let tokensFile = options.tokens.map { [directory] tokens in
            let path = directory.file("tokens", Array(tokens.utf8))
            chmod(path, 0o600)
            return path
        }
        let access = try AccessPolicy(tokensFile: tokensFile, publicRead: false, clock: options.clock)
        try access.directory.attach(store.catalog.access, settings: store.settings)
        let handlers = BlobdHandlers.Settings(version: "test", hooks: options.hooks,
                                              events: EventRouter.Settings(targets: Set(options.webhooks.keys), node: "n1"))
        var settings = BlobdNode.Settings(listener: HTTPServerConfiguration(host: "127.0.0.1", port: 0, threads: 2))
        settings.webhooks = options.webhooks
        settings.node = "n1"
        settings.log = nil
        node = BlobdNode(store: store, access: access, handlers: handlers, settings: settings, logger: logger)
        try node.start()
        v1 = TestClient.live(port: node.port ?? 0)
    }

    /// Stops every service of the node (again: nothing happens).
    func stop() {
        node.stop(grace: 5)
    }

    deinit { stop() }
}

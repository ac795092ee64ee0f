import ArgumentParser
import BlobHTTP
import BlobStore
import Dispatch
import Foundation
import Logging
import MicroHTTPD

/// Starting, running and stopping the server process.
enum BlobdServer {
    /// How long in-flight requests may run after SIGTERM/SIGINT before connections are cut.
    static let shutdownGrace = 10.0

    /// Opens the store, serves until SIGTERM or SIGINT, drains and exits 0.
    static func run(_ configuration: Configuration) throws -> Never {
        let logger = Logger(label: "blobd")
        let store: BlobStore
        do {
            store = try BlobStore(
                directory: configuration.dataDirectory,
                options: BlobStoreOptions(maxBlobSize: configuration.maxBlobSize, minFreeBytes: configuration.minFreeBytes),
                logger: logger)
        } catch StoreError.dataDirectoryLocked(let path) {
            fail("blobd: the data directory \(path) is in use by another blobd (lock file \(path)/lock); stop it first")
        } catch {
            fail("blobd: cannot open the data directory \(configuration.dataDirectory): \(error)")
        }

        let server: HTTPServer
        do {
            server = try HTTPServer(
                configuration: HTTPServerConfiguration(
                    host: configuration.host, port: configuration.port, threads: configuration.threads,
                    connectionTimeout: configuration.connectionTimeout, maxConnections: configuration.maxConnections),
                handler: BlobService(store: store, logger: logger))
        } catch {
            fail("blobd: \(error)")
        }

        signal(SIGPIPE, SIG_IGN)
        let signals = [SIGTERM, SIGINT].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                logger.info("Shutting down", metadata: ["signal": "\(number)", "requests.inflight": "\(server.requestsInFlight)"])
                server.shutdown(grace: shutdownGrace)
                withExtendedLifetime(store) {}
                exit(0)
            }
            source.resume()
            return source
        }

        let shownHost = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        FileHandle.standardError.write(Data("blobd listening on http://\(shownHost):\(server.port)\n".utf8))
        withExtendedLifetime(signals) { dispatchMain() }
    }

    private static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data((message + "\n").utf8))
        exit(1)
    }
}

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
                options: BlobStoreOptions(
                    maxBlobSize: configuration.maxBlobSize, minFreeBytes: configuration.minFreeBytes,
                    // Crash tests only: never set in production.
                    crashPoint: ProcessInfo.processInfo.environment["BLOBD_TEST_CRASH_AT"].flatMap(BlobStoreOptions.CrashPoint.init)),
                logger: logger)
        } catch StoreError.dataDirectoryLocked(let path) {
            fail("blobd: the data directory \(path) is in use by another blobd (lock file \(path)/lock); stop it first")
        } catch {
            fail("blobd: cannot open the data directory \(configuration.dataDirectory): \(error)")
        }

        let access: AccessPolicy
        do {
            access = try AccessPolicy(tokensFile: configuration.tokensFile, publicRead: configuration.publicRead)
        } catch {
            fail("blobd: \(error)")
        }
        if access.isOpen {
            logger.warning("No tokens file: every request is allowed (open access); use --tokens-file to require tokens")
        } else {
            logger.info("Tokens loaded", metadata: ["tokens.count": "\(access.tokenCount)", "public_read": "\(access.publicRead)"])
            if access.tokensFileIsExposed {
                logger.warning("The tokens file is readable by others than its owner; chmod 600 it",
                               metadata: ["tokens.file": "\(configuration.tokensFile ?? "")"])
            }
        }

        let server: HTTPServer
        do {
            server = try HTTPServer(
                configuration: HTTPServerConfiguration(
                    host: configuration.host, port: configuration.port, threads: configuration.threads,
                    connectionTimeout: configuration.connectionTimeout, maxConnections: configuration.maxConnections),
                handler: BlobService(store: store, access: access, uploadLifetime: Int64(configuration.uploadExpiry), logger: logger))
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
        // Expired resumable uploads are swept at start and then periodically.
        let sweeper = DispatchSource.makeTimerSource(queue: .global())
        let sweepInterval = max(1, min(60, configuration.uploadExpiry / 2))
        sweeper.schedule(deadline: .now(), repeating: .seconds(sweepInterval))
        sweeper.setEventHandler { store.removeExpiredUploads() }
        sweeper.resume()

        signal(SIGHUP, SIG_IGN)
        let reload = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
        reload.setEventHandler {
            do {
                try access.reload()
                logger.info("Tokens reloaded", metadata: ["tokens.count": "\(access.tokenCount)"])
            } catch {
                logger.error("Tokens file not reloaded; the previous tokens stay in force", metadata: ["error": "\(error)"])
            }
        }
        reload.resume()

        let shownHost = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        FileHandle.standardError.write(Data("blobd listening on http://\(shownHost):\(server.port)\n".utf8))
        withExtendedLifetime((signals, reload, sweeper)) { dispatchMain() }
    }

    private static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data((message + "\n").utf8))
        exit(1)
    }
}

import ArgumentParser
import HTTPCore
import Foundation
import PostgresClient
import Access

/// `blobd check-config [flags]`: what `blobd [flags]` would run with, checked without starting,
/// as `nginx -t` does. It takes every flag of `blobd serve` and reads the same `BLOBD_*`
/// variables and tokens file, but opens no data directory, binds no port and does not contact
/// PostgreSQL.
struct CheckConfig: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Check flags, BLOBD_* variables, the tokens file and the bootstrap file without starting (as nginx -t).",
        // Said outright: with serve's flags as an option group, the generated usage would read `blobd serve check-config`.
        usage: "blobd check-config [<serve flags>]",
        discussion: "Prints what blobd would run with and exits 0, or prints the first error and exits 64 (as blobd itself does).")

    @OptionGroup var serve: Serve

    func run() throws {
        let configuration: Configuration
        let access: AccessPolicy
        do {
            configuration = try serve.resolve()
            access = try Serve.accessPolicy(configuration)
        } catch let invalid as Configuration.Invalid {
            printError("blobd check-config: \(invalid.description)")
            throw ExitCode.validationFailure
        }
        var bootstrap = "none"
        if let path = configuration.bootstrapFile {
            do throws(Bootstrap.Invalid) {
                let plan = try Bootstrap.checkTargets(Bootstrap.load(path), targets: Set(configuration.webhookTargets.keys))
                bootstrap = "\(path): \(plan.buckets.count) buckets, \(plan.keys.count) keys, \(plan.anonymous.list.count) anonymous grants"
            } catch {
                // As blobd itself: a bad bootstrap file stops it with exit 2.
                printError("blobd check-config: --bootstrap \(path): \(error)")
                throw ExitCode(BlobdServer.badBootstrapStatus)
            }
        }
        for line in Self.summary(configuration, access: access) + ["bootstrap: \(bootstrap)"] { print(line) }
        for name in Self.unknownVariables(Configuration.processEnvironment, of: serve) {
            printError("blobd check-config: warning: \(name) is no setting of blobd (a typo?); it is ignored")
        }
    }

    /// `BLOBD_*` variables that name no flag of `serve` (a misspelt one is silently ignored
    /// otherwise). `BLOBD_TEST_*` are the tests' own.
    static func unknownVariables(_ environment: [String: String], of serve: Serve) -> [String] {
        let known = Set(Mirror(reflecting: serve).children.compactMap(\.label).map { label in
            "BLOBD_" + label.drop { $0 == "_" }.reduce(into: "") { name, character in
                if character.isUppercase { name += "_" }
                name += character.uppercased()
            }
        })
        // BLOBD_URL and BLOBD_TOKEN are settings of `blobd key`.
        return environment.keys.filter {
            $0.hasPrefix("BLOBD_") && !$0.hasPrefix("BLOBD_TEST_") && !known.contains($0) && !AdminOptions.variables.contains($0)
                && !$0.hasPrefix("BLOBD_NOTIFY_WEBHOOK_") && !$0.hasPrefix("BLOBD_NOTIFY_SECRET_")
        }.sorted()
    }

    /// One `name: value` line per setting, after a first line that says the check passed.
    static func summary(_ c: Configuration, access: AccessPolicy) -> [String] {
        var isDirectory: ObjCBool = false
        let dataDirectory = FileManager.default.fileExists(atPath: c.dataDirectory, isDirectory: &isDirectory)
            ? (isDirectory.boolValue ? "exists" : "not a directory") : "will be created"
        let tokens = access.isOpen ? "none (open access)"
            : "\(c.tokensFile ?? ""): \(access.tokenCount) bearer tokens, \(access.s3KeyCount) S3 keys"
        return [
            "blobd check-config: the configuration is valid",
            "listen: \(BlobdServer.address(c.host, c.port))",
            "s3-listen: \(c.s3Listen.map { BlobdServer.address($0.host, $0.port) } ?? "off")",
            "data-dir: \(c.dataDirectory) (\(dataDirectory))",
            "index: \(c.indexURL.map { PostgresPool.redacted($0) + " (not contacted)" } ?? "sqlite")",
            "node-id: \(c.nodeID)",
            "tokens-file: \(tokens)",
            "public-read: \(c.publicRead)",
            "ui: \(c.noUI ? "off" : "/ui/")",
            "max-blob-size: \(c.maxBlobSize.map { "\($0) bytes" } ?? "no limit")",
            "min-free-bytes: \(c.minFreeBytes) bytes",
            "upload-expiry: \(c.uploadExpiry) s",
            "connection-timeout: \(c.connectionTimeout) s",
            "max-connections: \(c.maxConnections)",
            "shutdown-grace: \(c.shutdownGrace) s",
            "threads: \(c.threads)",
            "log-level: \(c.logLevel)",
            "log-format: \(c.logFormat)",
        ] + c.eventSummary
    }
}

import Foundation
import LiveBlobd
import Testing

/// Issue 20 items 17 and 20: settings written as other tools taught (units, host names, level
/// spellings), exit 64 for every bad one, `blobd check-config`, and what the docs promise.
@Suite struct SettingsTests {
    /// `blobd check-config ARGS` (no BLOBD_* variable but `environment`): exit status, stdout and stderr.
    static func checkConfig(_ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, lines: [String], stderr: String) {
        let clean = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("BLOBD_") }.merging(environment) { $1 }
        let result = try run("/usr/bin/env", ["-i"] + clean.map { "\($0.key)=\($0.value)" } + [blobdExecutable(), "check-config"] + arguments)
        return (result.status, String(decoding: result.stdout, as: UTF8.self).split(separator: "\n").map(String.init), result.stderr)
    }

    /// The value check-config reports for `name`.
    static func reported(_ name: String, _ arguments: [String], environment: [String: String] = [:]) throws -> String? {
        let result = try checkConfig(arguments, environment: environment)
        #expect(result.status == 0, "\(arguments): \(result.stderr)")
        return result.lines.first { $0.hasPrefix(name + ": ") }.map { String($0.dropFirst(name.count + 2)) }
    }

    @Test(arguments: [
        ("100", "100 bytes"), ("10G", "10737418240 bytes"), ("10g", "10737418240 bytes"), ("512MiB", "536870912 bytes"),
        ("1K", "1024 bytes"), ("5GB", "5000000000 bytes"), ("2 TiB", "2199023255552 bytes"), ("1kb", "1000 bytes"),
    ])
    func sizesTakeUnits(text: String, bytes: String) throws {
        #expect(try Self.reported("max-blob-size", ["--max-blob-size", text]) == bytes)
        #expect(try Self.reported("min-free-bytes", [], environment: ["BLOBD_MIN_FREE_BYTES": text]) == bytes)
    }

    @Test(arguments: [("86400", "86400 s"), ("24h", "86400 s"), ("90s", "90 s"), ("15m", "900 s"), ("7d", "604800 s"), ("1h30m", "5400 s"), ("1.5h", "5400 s")])
    func durationsTakeUnits(text: String, seconds: String) throws {
        #expect(try Self.reported("upload-expiry", ["--upload-expiry", text]) == seconds)
        #expect(try Self.reported("connection-timeout", [], environment: ["BLOBD_CONNECTION_TIMEOUT": text]) == seconds)
    }

    @Test func listenTakesHostNamesAndAnEmptyHostAndLevelsTheirCommonSpellings() throws {
        #expect(try Self.reported("listen", ["--listen", "localhost:8080"]) == "127.0.0.1:8080")
        #expect(try Self.reported("listen", ["--listen", ":8080"]) == "0.0.0.0:8080")
        #expect(try Self.reported("s3-listen", ["--s3-listen", "[::1]:9000"]) == "[::1]:9000")
        #expect(try Self.reported("shutdown-grace", ["--shutdown-grace", "30s"]) == "30.0 s")
        for (text, level) in [("warn", "warning"), ("WARNING", "warning"), ("err", "error"), ("crit", "critical"),
                              ("critical", "critical"), ("notice", "notice"), ("trace", "trace"), ("info", "info")] {
            #expect(try Self.reported("log-level", ["--log-level", text]) == level)
        }
        // Served for real: a host name binds to its address.
        let blobd = try BlobdProcess(["--listen", "localhost:0", "--log-level", "warn", "--max-blob-size", "1K", "--upload-expiry", "1h"])
        #expect(try curl(["-X", "PUT", "--data-binary", String(repeating: "x", count: 1025), blobd.baseURL + "/v1/blobs/big"]).status == 413)
        #expect(try curl(["-X", "PUT", "--data-binary", String(repeating: "x", count: 1024), blobd.baseURL + "/v1/blobs/ok"]).status == 201)
    }

    /// Every bad setting, as a flag or a variable, and a missing tokens file exit 64 (which
    /// the systemd unit's RestartPreventExitStatus does not restart), before anything starts.
    @Test(arguments: [
        (["--max-blob-size", "10X"], [:]), (["--max-blob-size", "99999999999T"], [:]), (["--upload-expiry", "0"], [:]),
        (["--upload-expiry", "1w"], [:]), (["--upload-expiry", "1h30"], [:]), (["--connection-timeout", "1.5"], [:]),
        (["--listen", "127.0.0.1"], [:]), (["--listen", "127.0.0.1:99999"], [:]), (["--log-level", "loud"], [:]),
        (["--tokens-file", "/nonexistent/tokens"], [:]), ([], ["BLOBD_UPLOAD_EXPIRY": "soon"]), ([], ["BLOBD_LOG_LEVEL": "verbose"]),
        ([], ["BLOBD_TOKENS_FILE": "/nonexistent/tokens"]), ([], ["BLOBD_PUBLIC_READ": "perhaps"]), (["--shutdown-grace", "2h"], [:]),
    ] as [([String], [String: String])])
    func badSettingsExit64(arguments: [String], environment: [String: String]) throws {
        let dir = TempDir()
        let clean = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("BLOBD_") }.merging(environment) { $1 }
        let serve = try run("/usr/bin/env", ["-i"] + clean.map { "\($0.key)=\($0.value)" }
                            + [blobdExecutable(), "--data-dir", dir.path + "/d", "--listen", "127.0.0.1:0"] + arguments, timeout: 30)
        #expect(serve.status == 64, "\(arguments) \(environment): \(serve.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/d"), "nothing started")
        let check = try Self.checkConfig(arguments, environment: environment)
        #expect(check.status == 64)
        #expect(check.stderr.hasPrefix("blobd check-config: "), "\(check.stderr)")
    }

    @Test func checkConfigSummarisesTheTokensFile() throws {
        let dir = TempDir()
        let tokens = dir.file("tokens", Array("t1 read\nt2 read,write\ns3 AKID SECRET read\n".utf8))
        chmod(tokens, 0o600)
        let result = try Self.checkConfig(["--data-dir", dir.path], environment: ["BLOBD_TOKENS_FILE": tokens, "BLOBD_MAX_BLOB_SIZ": "1G",
                                                                                "BLOBD_PUBLIC_READ": "yes", "BLOBD_URL": "http://127.0.0.1:1",
                                                                                "BLOBD_TOKEN": "t1"])  // blobd key's: no warning
        #expect(result.status == 0)
        #expect(result.stderr == "blobd check-config: warning: BLOBD_MAX_BLOB_SIZ is no setting of blobd (a typo?); it is ignored\n")
        #expect(result.lines.contains("public-read: true"))
        #expect(result.lines.first == "blobd check-config: the configuration is valid")
        #expect(result.lines.contains("tokens-file: \(tokens): 2 bearer tokens, 1 S3 keys"))
        #expect(result.lines.contains("data-dir: \(dir.path) (exists)"))
    }

    /// The help of every command reads as prose: no stray backslash of a line continuation.
    @Test func helpHasNoStrayBackslashes() throws {
        for command in [["--help"], ["serve", "--help"], ["check-config", "--help"], ["fsck", "--help"], ["migrate-index", "--help"],
                        ["key", "--help"], ["key", "create", "--help"], ["key", "grant", "--help"], ["key", "revoke", "--help"]] {
            let result = try run(blobdExecutable(), command)
            let text = String(decoding: result.stdout, as: UTF8.self)
            #expect(result.status == 0 && text.contains("USAGE"), "\(command)")
            #expect(!text.contains("\\"), "\(command): \(text)")
        }
    }

    /// openapi.yaml's info.version is the release `blobd --version` prints.
    @Test func openAPIVersionIsTheBinarys() throws {
        let yaml = try String(contentsOf: DeployTests.root.appendingPathComponent("openapi.yaml"), encoding: .utf8)
        let info = try #require(yaml.components(separatedBy: "\ninfo:\n").dropFirst().first)
        let line = try #require(info.split(separator: "\n").first { $0.hasPrefix("  version: ") })
        let version = try run(blobdExecutable(), ["--version"])
        #expect(line.dropFirst("  version: ".count) == String(decoding: version.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// `make run` installs only what building and running need: no test servers, no Ceph.
    @Test func makeRunInstallsOnlyWhatRunningNeeds() throws {
        let result = try run("/usr/bin/make", ["-n", "--no-print-directory", "-C", DeployTests.root.path, "run"])
        #expect(result.status == 0, "\(result.stderr)")
        let commands = String(decoding: result.stdout, as: UTF8.self)
        #expect(commands.contains("libmicrohttpd-dev") && commands.contains("swift build -c release"))
        for package in ["ceph", "postgresql ", "nginx", "restic", "rclone", "python3-pip"] {
            #expect(!commands.contains(package), "make run installs \(package)")
        }
    }
}

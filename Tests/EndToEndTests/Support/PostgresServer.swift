import Foundation
import LiveBlobd
import Testing

/// A throwaway PostgreSQL 15 from Debian's packages: `initdb` into a temp dir (as the
/// `postgres` user when running as root), `pg_ctl start` on 127.0.0.1 with a free port and
/// its socket in the temp dir; stopped by the postmaster's PID.
final class PostgresServer: @unchecked Sendable {
    static let binaries = "/usr/lib/postgresql/15/bin"
    static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: binaries + "/initdb") }

    let dir = TempDir("blobd-pg")
    let port: Int
    private var dataDir: String { dir.path + "/data" }
    private let asRoot = getuid() == 0

    /// A URL for the `blobd` database, owned by the `blobd` role.
    var url: String { "postgres://blobd@127.0.0.1:\(port)/blobd" }

    init() throws {
        port = try freePort()
        if asRoot {
            // The postgres user must own its folder and be able to reach it.
            chmod(dir.path, 0o755)
            _ = try run("/bin/chown", ["postgres:postgres", dir.path])
        }
        let initialized = try command("initdb", ["-D", dataDir, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale", "C.UTF-8"])
        guard initialized.status == 0 else { throw TestFailure("initdb: \(initialized.stderr)") }
        try start()
        for sql in ["CREATE ROLE blobd LOGIN", "CREATE DATABASE blobd OWNER blobd"] {
            let made = try psql(sql)
            guard made.status == 0 else { throw TestFailure("psql: \(made.stderr)") }
        }
    }

    deinit { stop() }

    /// Starts the server (again) on the same port and data, waiting until it accepts connections.
    func start() throws {
        let options = "-p \(port) -k \(dir.path) -c listen_addresses=127.0.0.1 -c synchronous_commit=on -c max_connections=200"
        let started = try command("pg_ctl", ["-D", dataDir, "-o", options, "-l", dir.path + "/log", "-w", "-t", "30", "start"])
        guard started.status == 0 else {
            let log = (try? String(contentsOfFile: dir.path + "/log", encoding: .utf8)) ?? ""
            throw TestFailure("pg_ctl start: \(started.stderr) \(log)")
        }
    }

    /// The postmaster's PID (the first line of postmaster.pid), while it runs.
    var pid: Int32? {
        (try? String(contentsOfFile: dataDir + "/postmaster.pid", encoding: .utf8))?
            .split(separator: "\n").first.flatMap { Int32($0) }
    }

    /// Fast shutdown by PID (SIGINT: sessions are cut, the server stops cleanly), bounded.
    func stop() {
        guard let pid else { return }
        kill(pid, SIGINT)
        let deadline = Date().addingTimeInterval(30)
        while kill(pid, 0) == 0 && Date() < deadline { usleep(20_000) }
        if kill(pid, 0) == 0 { kill(pid, SIGKILL) }
    }

    /// Runs SQL as the superuser on the socket.
    @discardableResult
    func psql(_ sql: String, database: String = "postgres") throws -> (status: Int32, stdout: [UInt8], stderr: String) {
        try command("psql", ["-h", dir.path, "-p", String(port), "-U", "postgres", "-d", database, "-v", "ON_ERROR_STOP=1",
                             "-At", "-c", sql])
    }

    /// Runs a PostgreSQL program, as `postgres` when root (pg_ctl leaves the postmaster running).
    private func command(_ name: String, _ arguments: [String]) throws -> (status: Int32, stdout: [UInt8], stderr: String) {
        let path = (name == "psql" ? "/usr/bin/psql" : "\(Self.binaries)/\(name)")
        return try runLeavingDaemons((asRoot ? ["/usr/sbin/runuser", "-u", "postgres", "--"] : []) + [path] + arguments, timeout: 60)
    }
}

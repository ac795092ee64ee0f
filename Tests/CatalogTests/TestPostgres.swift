import Foundation
import PostgresClient
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One throwaway PostgreSQL 15 for the whole test run, started on first use: `initdb` into a
/// temp dir (as the `postgres` user when running as root), `pg_ctl start` on 127.0.0.1 with a
/// free port, stopped by the postmaster's PID when the catalog suite ends (`CatalogRun`). A
/// server that cannot start fails every test that needs it (none is skipped).
/// Each test gets a role and a schema of its own (`freshURL`): the role's default search path
/// ("$user", public) puts its tables there, so tests never see one another's rows.
final class TestPostgres: Sendable {
    static let binaries = "/usr/lib/postgresql/15/bin"
    static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: binaries + "/initdb") }

    let dir: String
    let port: Int
    private let schemas = Atomic<Int>(0)
    private static let asRoot = getuid() == 0

    /// The server of this run, started on first use; nil until then.
    private static let shared = Mutex<Result<TestPostgres, TestFailure>?>(nil)

    /// The server of this run, started now if it is not running yet.
    static func running() throws -> TestPostgres {
        try shared.withLock { server throws(TestFailure) in
            let result = server ?? Result { () throws(TestFailure) in try TestPostgres() }
            server = result
            return try result.get()
        }
    }

    /// Stops the server of this run, if one was started.
    static func stopShared() {
        shared.withLock { server in
            if case .success(let running)? = server { running.stop() }
            server = nil
        }
    }

    private init() throws(TestFailure) {
        // Not a skip: every backend's half of the suite runs, or the run fails.
        guard Self.isInstalled else { throw TestFailure("PostgreSQL 15 is not installed (no \(Self.binaries)/initdb): make deps installs it") }
        dir = NSTemporaryDirectory() + "blobd-catalog-pg-" + UUID().uuidString
        port = try freePort()
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        if Self.asRoot {
            chmod(dir, 0o755)
            try Self.check("chown", spawn("/bin/chown", ["postgres:postgres", dir], output: nil))
        }
        // The default collation is ICU's en-US, not C: text compares as a person reads, so a
        // listing or range that leans on the database's string order instead of bytes fails here.
        try Self.check("initdb", command("initdb", ["-D", dir + "/data", "-U", "postgres", "-A", "trust", "-E", "UTF8",
                                                   "--locale", "C.UTF-8", "--locale-provider", "icu", "--icu-locale", "en-US",
                                                   "--no-sync"]))
        // fsync off: durability is not what these tests check, and the suite should take seconds.
        let options = "-p \(port) -k \(dir) -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300"
        try Self.check("pg_ctl start", command("pg_ctl", ["-D", dir + "/data", "-o", options, "-l", dir + "/log", "-w", "-t", "30", "start"]))
        try checkCollation()
    }

    /// The trap is set: the database's default collation puts "a" before "B" (C would not).
    private func checkCollation() throws(TestFailure) {
        let collates: Bool
        do {
            let admin = try PostgresConnection("postgres://postgres@127.0.0.1:\(port)/postgres")
            collates = try admin.execute("SELECT 'a' < 'B' AS found").rows.first?.bool("found") == true
        } catch {
            throw TestFailure("checking the test server's collation: \(error)")
        }
        guard collates else { throw TestFailure("the test server compares text in C order, not a locale's") }
    }

    /// A URL of the `postgres` database for a new role with a schema of its own.
    func freshURL() throws -> String {
        let name = "catalog_\(schemas.add(1, ordering: .relaxed).newValue)"
        let admin = try PostgresConnection("postgres://postgres@127.0.0.1:\(port)/postgres")
        try admin.simple("CREATE ROLE \(name) LOGIN; CREATE SCHEMA \(name) AUTHORIZATION \(name)")
        return "postgres://\(name)@127.0.0.1:\(port)/postgres"
    }

    /// Fast shutdown by PID (SIGINT), bounded; then the data goes.
    private func stop() {
        let pidText = try? String(contentsOfFile: dir + "/data/postmaster.pid", encoding: .utf8)
        if let pid = pidText?.split(separator: "\n").first.flatMap({ Int32($0) }) {
            kill(pid, SIGINT)
            let deadline = Date().addingTimeInterval(30)
            while kill(pid, 0) == 0 && Date() < deadline { usleep(20_000) }
            if kill(pid, 0) == 0 { kill(pid, SIGKILL) }
        }
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// Runs a PostgreSQL program, as `postgres` when root; its output goes to `dir/NAME.out`.
    private func command(_ name: String, _ arguments: [String]) -> Int32 {
        let argv = (Self.asRoot ? ["/usr/sbin/runuser", "-u", "postgres", "--"] : []) + ["\(Self.binaries)/\(name)"] + arguments
        return spawn(argv[0], Array(argv.dropFirst()), output: dir + "/\(name).out")
    }

    private static func check(_ what: String, _ status: Int32) throws(TestFailure) {
        guard status != 0 else { return }
        throw TestFailure("\(what) exited with \(status); see \(NSTemporaryDirectory())blobd-catalog-pg-*")
    }
}

/// Runs `path` with `arguments` to completion (bounded by 60 s), stdout and stderr to `output`
/// (or /dev/null); returns its exit status (-1 if it could not start or did not finish). Waits
/// with waitpid, not on a pipe, so a daemon it leaves behind (the postmaster) cannot hold it up.
func spawn(_ path: String, _ arguments: [String], output: String?) -> Int32 {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o666)
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO)
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    guard posix_spawn(&pid, path, &actions, nil, argv, environ) == 0 else { return -1 }
    let deadline = Date().addingTimeInterval(60)
    var status: Int32 = 0
    while waitpid(pid, &status, WNOHANG) == 0 {
        guard Date() < deadline else {
            kill(pid, SIGKILL)
            waitpid(pid, &status, 0)
            return -1
        }
        usleep(5_000)
    }
    return status & 0x7F == 0 ? (status >> 8) & 0xFF : -1
}

/// A TCP port on 127.0.0.1 that was free a moment ago.
func freePort() throws(TestFailure) -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw TestFailure("socket: errno \(errno)") }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else { throw TestFailure("bind: errno \(errno)") }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

import Dispatch
import Foundation
import Synchronization

/// A bounded pool of connections, opened on demand and dropped when they break, so the node
/// reconnects by itself once PostgreSQL is back. Waiting for a connection and opening one are
/// both bounded: a caller gets `.unavailable` within about `waitSeconds` plus the connect
/// timeout, never a hang.
public final class PostgresPool: Sendable {
    private let conninfo: String
    private let idle = Mutex<[Handover]>([])
    private let slots: DispatchSemaphore
    private let waitSeconds: Double

    /// A connection handed between threads; one thread uses it at a time.
    private struct Handover: @unchecked Sendable {
        let connection: PostgresConnection
    }

    /// `url`: a `postgres://` URL or libpq `key=value` string. Connections get a bounded
    /// connect timeout and TCP keepalives unless the URL sets its own.
    public init(url: String, size: Int, waitSeconds: Double = 5) {
        conninfo = Self.withDefaults(url)
        slots = DispatchSemaphore(value: max(1, size))
        self.waitSeconds = waitSeconds
    }

    /// Runs `body` with a connection of the pool. An idle connection that turns out to be
    /// broken (PostgreSQL restarted meanwhile) before its first statement succeeded is dropped
    /// and `body` runs once more on a new one: nothing of it reached the server.
    public func withConnection<T>(_ body: (PostgresConnection) throws(PostgresError) -> T) throws(PostgresError) -> T {
        guard slots.wait(timeout: .now() + waitSeconds) == .success else {
            throw .unavailable("no database connection became free within \(Int(waitSeconds)) s")
        }
        defer { slots.signal() }
        if let reused = idle.withLock({ $0.popLast() })?.connection {
            let before = reused.succeeded
            do throws(PostgresError) {
                return try use(reused, body)
            } catch .unavailable(let message) {
                guard !reused.isUsable, reused.succeeded == before else { throw .unavailable(message) }
            }
        }
        return try use(try PostgresConnection(conninfo), body)
    }

    /// Runs `body` on `connection`, then keeps the connection for reuse if it is still good.
    private func use<T>(_ connection: PostgresConnection, _ body: (PostgresConnection) throws(PostgresError) -> T) throws(PostgresError) -> T {
        defer {
            if connection.isUsable { idle.withLock { $0.append(Handover(connection: connection)) } }
        }
        return try body(connection)
    }

    /// Runs `body` in a transaction: BEGIN, then COMMIT (or ROLLBACK when it throws). A
    /// transaction that lost a race (serialization failure, deadlock) runs again, up to 5 times.
    public func transaction<T>(_ body: (PostgresConnection) throws(PostgresError) -> T) throws(PostgresError) -> T {
        var attempt = 0
        while true {
            attempt += 1
            do throws(PostgresError) {
                return try withConnection { connection throws(PostgresError) in
                    try connection.simple("BEGIN")
                    do throws(PostgresError) {
                        let value = try body(connection)
                        try connection.simple("COMMIT")
                        return value
                    } catch {
                        try? connection.simple("ROLLBACK")
                        throw error
                    }
                }
            } catch .retry(let message) {
                if attempt >= 5 { throw .retry(message) }
            }
        }
    }

    /// The URL with libpq's defaults for a server: connect within 5 s, notice a dead peer
    /// within about 20 s, and `synchronous_commit` on for blobd's sessions whatever the server's
    /// default (an acknowledged write must survive a database crash). Sequential scans are off:
    /// every statement blobd sends looks rows up by a primary key, and a prepared statement's
    /// generic plan, made once per connection, would otherwise keep the sequential scan it chose
    /// while a table was small (measured: 0.6 ms instead of 0.04 ms per batched lookup after a
    /// few thousand rows). Plans are always generic: every statement is a key lookup or a key
    /// range whose plan does not depend on the values, and with custom plans PostgreSQL planned
    /// the batched `key = ANY($1)` lookup anew on every execution (its custom plan looks cheaper
    /// for a short array), which was a third of its CPU per 4 KiB GET.
    /// NOTICEs stay on the server: libpq would print them raw on stderr, in the middle of
    /// blobd's log (every start said that `blobd_migrations` already exists).
    static func withDefaults(_ url: String) -> String {
        let isURL = url.hasPrefix("postgres://") || url.hasPrefix("postgresql://")
        let defaults = [("application_name", "blobd"), ("connect_timeout", "5"), ("keepalives_count", "2"),
                        ("keepalives_idle", "10"), ("keepalives_interval", "5"),
                        ("options", isURL ? "-c%20synchronous_commit%3Don%20-c%20enable_seqscan%3Doff%20-c%20plan_cache_mode%3Dforce_generic_plan%20-c%20client_min_messages%3Dwarning"
                            : "'-c synchronous_commit=on -c enable_seqscan=off -c plan_cache_mode=force_generic_plan -c client_min_messages=warning'")]
        var result = url
        for (name, value) in defaults where !url.contains(name + "=") {
            if isURL {
                result += (result.contains("?") ? "&" : "?") + "\(name)=\(value)"
            } else {
                result += " \(name)=\(value)"
            }
        }
        return result
    }

    /// The URL without its passwords, for logs: `user:***@` in the authority and `password=***`
    /// (and `sslpassword=***`) in the query or a `key=value` string.
    public static func redacted(_ url: String) -> String {
        guard let scheme = url.range(of: "://") else {
            return url.split(separator: " ").map { hidesValue($0) ? String($0.prefix { $0 != "=" }) + "=***" : String($0) }.joined(separator: " ")
        }
        var result = String(url[..<scheme.upperBound])
        var rest = url[scheme.upperBound...]
        // libpq takes the user information up to the first `@` before any `/`.
        let beforePath = rest.prefix { $0 != "/" }
        if let at = beforePath.firstIndex(of: "@") {
            let userInfo = rest[..<at]
            result += userInfo.firstIndex(of: ":").map { String(userInfo[..<$0]) + ":***" } ?? String(userInfo)
            rest = rest[at...]
        }
        guard let question = rest.firstIndex(of: "?") else { return result + rest }
        result += rest[...question]
        let query = rest[rest.index(after: question)...].split(separator: "&", omittingEmptySubsequences: false)
        return result + query.map { hidesValue($0) ? String($0.prefix { $0 != "=" }) + "=***" : String($0) }.joined(separator: "&")
    }

    /// A `name=value` parameter whose value is a secret.
    private static func hidesValue(_ parameter: Substring) -> Bool {
        let name = parameter.prefix { $0 != "=" }.lowercased()
        return parameter.contains("=") && (name == "password" || name == "sslpassword")
    }
}

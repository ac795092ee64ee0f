import CLibPQ
import Foundation

/// What went wrong talking to PostgreSQL, by kind: callers answer 503 for `.unavailable`,
/// retry `.retry`, and map the rest.
public enum PostgresError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No connection, a lost one, or a server shutting down or starting (SQLSTATE 08xxx, 57Pxx).
    case unavailable(String)
    /// The transaction lost a race and may simply be run again (40001, 40P01).
    case retry(String)
    /// A unique constraint held (23505).
    case uniqueViolation(String)
    /// The server is out of disk (53100).
    case diskFull(String)
    /// Anything else, with its SQLSTATE.
    case failed(sqlState: String, message: String)

    public var description: String {
        switch self {
        case .unavailable(let message): "PostgreSQL unavailable: \(message)"
        case .retry(let message): "PostgreSQL transaction conflict: \(message)"
        case .uniqueViolation(let message): "PostgreSQL unique violation: \(message)"
        case .diskFull(let message): "PostgreSQL disk full: \(message)"
        case .failed(let state, let message): "PostgreSQL error \(state): \(message)"
        }
    }

    /// The kind of an error SQLSTATE.
    static func from(sqlState: String, message: String) -> PostgresError {
        switch sqlState {
        case "40001", "40P01": .retry(message)
        case "23505": .uniqueViolation(message)
        case "53100": .diskFull(message)
        case _ where sqlState.hasPrefix("08") || sqlState.hasPrefix("57P"): .unavailable(message)
        default: .failed(sqlState: sqlState, message: message)
        }
    }
}

/// A parameter of a statement, sent in text format (bytea as `\x` hex).
public enum PostgresValue: Sendable {
    case text(String)
    case int(Int64)
    case bytes([UInt8])
    case null

    var text: String? {
        switch self {
        case .text(let text): text
        case .int(let value): String(value)
        case .bytes(let bytes): "\\x" + bytes.map { String(format: "%02x", $0) }.joined()
        case .null: nil
        }
    }
}

/// The rows a statement returned, read in text format.
public struct PostgresRows: Sendable {
    public let columns: [String: Int]
    private let values: [[String?]]
    /// Rows the statement changed (INSERT, UPDATE, DELETE).
    public let affected: Int

    init(result: OpaquePointer) {
        let rows = Int(PQntuples(result)), fields = Int(PQnfields(result))
        var columns: [String: Int] = [:]
        for field in 0..<fields { columns[String(cString: PQfname(result, Int32(field)))] = field }
        self.columns = columns
        values = (0..<rows).map { row in
            (0..<fields).map { field in
                PQgetisnull(result, Int32(row), Int32(field)) == 1 ? nil : String(cString: PQgetvalue(result, Int32(row), Int32(field)))
            }
        }
        affected = Int(String(cString: PQcmdTuples(result))) ?? 0
    }

    public var count: Int { values.count }

    public subscript(row: Int) -> PostgresRow { PostgresRow(columns: columns, values: values[row]) }

    public var rows: [PostgresRow] { values.map { PostgresRow(columns: columns, values: $0) } }
}

/// One row, by column name.
public struct PostgresRow: Sendable {
    let columns: [String: Int]
    let values: [String?]

    public func text(_ column: String) -> String? {
        columns[column].flatMap { values[$0] }
    }

    public func int(_ column: String) -> Int64? {
        text(column).flatMap { Int64($0) }
    }

    public func bool(_ column: String) -> Bool? {
        text(column).map { $0 == "t" }
    }

    /// A bytea column (PostgreSQL's default hex output, `\x...`).
    public func bytes(_ column: String) -> [UInt8]? {
        guard let text = text(column) else { return nil }
        let digits = Array(text.utf8.dropFirst(2))
        guard text.hasPrefix("\\x"), digits.count % 2 == 0 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = Self.nibble(digits[index]), let low = Self.nibble(digits[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// One libpq connection (`PGconn`), used by one thread at a time (the pool hands it out).
/// Statements are prepared on first use and reused by name.
public final class PostgresConnection {
    private let connection: OpaquePointer
    private var prepared: [String: String] = [:]
    /// Statements that have succeeded on this connection.
    public private(set) var succeeded = 0

    /// Connects with `conninfo` (a `postgres://` URL or `key=value` pairs; the standard `PG*`
    /// environment fills in the rest), bounded by `connect_timeout`.
    public init(_ conninfo: String) throws(PostgresError) {
        guard let connection = PQconnectdb(conninfo) else { throw .unavailable("out of memory") }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.message(connection)
            PQfinish(connection)
            throw .unavailable(message)
        }
        self.connection = connection
    }

    deinit { PQfinish(connection) }

    /// False once the connection broke; the pool then drops it.
    public var isUsable: Bool { PQstatus(connection) == CONNECTION_OK && PQtransactionStatus(connection) == PQTRANS_IDLE }

    /// Runs one statement (prepared and cached by its text) with `parameters` as $1, $2, ….
    @discardableResult
    public func execute(_ sql: String, _ parameters: [PostgresValue] = []) throws(PostgresError) -> PostgresRows {
        let name: String
        if let known = prepared[sql] {
            name = known
        } else {
            name = "s\(prepared.count)"
            let result = PQprepare(connection, name, sql, Int32(parameters.count), nil)
            try check(result)
            PQclear(result)
            prepared[sql] = name
        }
        let texts = parameters.map(\.text)
        let result = withCStrings(texts) { pointers in
            PQexecPrepared(connection, name, Int32(pointers.count), pointers, nil, nil, 0)
        }
        try check(result)
        defer { PQclear(result) }
        guard let result else { throw .unavailable(Self.message(connection)) }
        succeeded += 1
        return PostgresRows(result: result)
    }

    /// Runs statements without parameters or preparation (schema changes, BEGIN, COMMIT).
    public func simple(_ sql: String) throws(PostgresError) {
        let result = PQexec(connection, sql)
        try check(result)
        PQclear(result)
        succeeded += 1
    }

    private func check(_ result: OpaquePointer?) throws(PostgresError) {
        guard let result else { throw .unavailable(Self.message(connection)) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return
        default:
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) } ?? ""
            let message = String(cString: PQresultErrorMessage(result)).trimmingCharacters(in: .whitespacesAndNewlines)
            PQclear(result)
            if state.isEmpty || PQstatus(connection) != CONNECTION_OK { throw .unavailable(message.isEmpty ? Self.message(connection) : message) }
            throw PostgresError.from(sqlState: state, message: message)
        }
    }

    private static func message(_ connection: OpaquePointer) -> String {
        String(cString: PQerrorMessage(connection)).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// Calls `body` with C strings for `values` (NULL for nil), valid during the call.
private func withCStrings<T>(_ values: [String?], _ body: ([UnsafePointer<CChar>?]) -> T) -> T {
    let copies = values.map { $0.map { strdup($0) } ?? nil }
    defer { for copy in copies { free(copy) } }
    return body(copies.map { $0.map { UnsafePointer($0) } })
}

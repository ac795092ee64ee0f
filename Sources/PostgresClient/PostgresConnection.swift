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

/// A parameter of a statement. Its type is the one the server infers from the statement;
/// bytea goes in binary format (its bytes, no escaping), numbers and text in text format,
/// which suits whichever integer or text type the column has.
public enum PostgresValue: Sendable {
    case text(String)
    case int(Int64)
    case bytes([UInt8])
    /// A one-dimensional `bytea[]` without NULLs (for `= ANY($1)`).
    case byteaArray([[UInt8]])
    /// A one-dimensional `text[]` without NULLs (for `unnest($1)`).
    case textArray([String])
    case null

    /// The bytes on the wire, nil for NULL.
    var wire: [UInt8]? {
        switch self {
        case .text(let text): Array(text.utf8)
        case .int(let value): Array(String(value).utf8)
        case .bytes(let bytes): bytes
        case .byteaArray(let elements): Self.binaryArray(elements, elementType: 17)
        case .textArray(let elements): Self.binaryArray(elements.map { Array($0.utf8) }, elementType: 25)
        case .null: nil
        }
    }

    /// 1 (binary) for bytea and for arrays, 0 (text) for the rest.
    var format: Int32 {
        switch self {
        case .bytes, .byteaArray, .textArray: 1
        default: 0
        }
    }

    /// PostgreSQL's binary array format (`array_send`), one dimension, no NULLs: the number of
    /// dimensions, a has-nulls flag, the element type's OID, the length and lower bound (1),
    /// then each element's length and bytes; every integer 32-bit big-endian.
    static func binaryArray(_ elements: [[UInt8]], elementType: Int32) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(20 + elements.reduce(0) { $0 + 4 + $1.count })
        func put(_ value: Int32) {
            withUnsafeBytes(of: value.bigEndian) { out.append(contentsOf: $0) }
        }
        for header in [1, 0, elementType, Int32(elements.count), 1] { put(header) }
        for element in elements {
            put(Int32(element.count))
            out += element
        }
        return out
    }
}

/// The rows a statement returned, in binary format.
public struct PostgresRows: Sendable {
    public let columns: [String: Int]
    private let values: [[[UInt8]?]]
    /// Rows the statement changed (INSERT, UPDATE, DELETE).
    public let affected: Int

    /// `columns`: the statement's column names, when already known (they are the same on every
    /// execution of a prepared statement).
    init(result: OpaquePointer, columns known: [String: Int]? = nil) {
        let rows = Int(PQntuples(result)), fields = Int(PQnfields(result))
        self.columns = known ?? Self.columns(of: result)
        values = (0..<rows).map { row in
            (0..<fields).map { field in
                guard PQgetisnull(result, Int32(row), Int32(field)) == 0 else { return nil }
                let length = Int(PQgetlength(result, Int32(row), Int32(field)))
                guard length > 0, let pointer = PQgetvalue(result, Int32(row), Int32(field)) else { return [] }
                return pointer.withMemoryRebound(to: UInt8.self, capacity: length) { Array(UnsafeBufferPointer(start: $0, count: length)) }
            }
        }
        affected = Int(String(cString: PQcmdTuples(result))) ?? 0
    }

    static func columns(of result: OpaquePointer) -> [String: Int] {
        var columns: [String: Int] = [:]
        for field in 0..<Int(PQnfields(result)) { columns[String(cString: PQfname(result, Int32(field)))] = field }
        return columns
    }

    public var count: Int { values.count }

    public subscript(row: Int) -> PostgresRow { PostgresRow(columns: columns, values: values[row]) }

    public var rows: [PostgresRow] { values.map { PostgresRow(columns: columns, values: $0) } }
}

/// One row, by column name, decoding PostgreSQL's binary formats: text and bytea as bytes,
/// smallint, integer and bigint big-endian, boolean one byte.
public struct PostgresRow: Sendable {
    let columns: [String: Int]
    let values: [[UInt8]?]

    public func bytes(_ column: String) -> [UInt8]? {
        columns[column].flatMap { values[$0] }
    }

    public func text(_ column: String) -> String? {
        bytes(column).map { String(decoding: $0, as: UTF8.self) }
    }

    public func int(_ column: String) -> Int64? {
        guard let bytes = bytes(column), [2, 4, 8].contains(bytes.count) else { return nil }
        var value: Int64 = Int64(Int8(bitPattern: bytes[0]))  // sign-extended
        for byte in bytes.dropFirst() { value = value << 8 | Int64(byte) }
        return value
    }

    public func bool(_ column: String) -> Bool? {
        bytes(column).map { $0.first == 1 }
    }
}

/// One libpq connection (`PGconn`), used by one thread at a time (the pool hands it out).
/// Statements are prepared on first use and reused by name.
public final class PostgresConnection {
    private let connection: OpaquePointer
    /// Prepared statements by their text: the name, and the result's columns once seen.
    private var prepared: [String: (name: String, columns: [String: Int]?)] = [:]
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
        // libpq prints server notices (`relation … already exists, skipping`) to stderr, which
        // would put plain-text lines in blobd's JSON log; they tell an operator nothing.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
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
            name = known.name
        } else {
            name = "s\(prepared.count)"
            let result = PQprepare(connection, name, sql, Int32(parameters.count), nil)
            try check(result)
            PQclear(result)
            prepared[sql] = (name, nil)
        }
        let result = withWire(parameters) { pointers, lengths, formats in
            PQexecPrepared(connection, name, Int32(pointers.count), pointers, lengths, formats, 1)
        }
        try check(result)
        defer { PQclear(result) }
        guard let result else { throw .unavailable(Self.message(connection)) }
        succeeded += 1
        let columns = prepared[sql]?.columns ?? PostgresRows.columns(of: result)
        prepared[sql]?.columns = columns
        return PostgresRows(result: result, columns: columns)
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

/// Calls `body` with the parameters' bytes (NULL for nil; text ones NUL-terminated), lengths
/// and formats, valid during the call.
private func withWire<T>(_ parameters: [PostgresValue], _ body: ([UnsafePointer<CChar>?], [Int32], [Int32]) -> T) -> T {
    let values = parameters.map(\.wire)
    let copies: [UnsafeMutablePointer<UInt8>?] = values.map { value in
        guard let value else { return nil }
        let copy = UnsafeMutablePointer<UInt8>.allocate(capacity: value.count + 1)
        copy.initialize(from: value, count: value.count)
        copy[value.count] = 0
        return copy
    }
    defer { for copy in copies { copy?.deallocate() } }
    let pointers = copies.map { $0.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) } }
    return body(pointers, values.map { Int32($0?.count ?? 0) }, parameters.map(\.format))
}

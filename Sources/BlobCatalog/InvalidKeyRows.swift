import BlobCore
import Logging
import Synchronization

/// Index rows whose key fails `BlobKey(validating:)`: written by hand, or by a release whose key
/// rules were looser. No request can name them, so listings, fsck and the expiry sweeps skip
/// them, but never silently: each is logged once, with its raw key, and counted.
public final class InvalidKeyRows: Sendable {
    /// Rows remembered (and so logged once each), at most; past that each sighting is logged.
    static let remembered = 10_000

    private struct Seen {
        var rows: Set<Row> = []
        var count = 0
    }

    /// A row of `table` with the raw key `key`.
    private struct Row: Hashable {
        var table: String
        var key: [UInt8]
    }

    private let logger: Logger
    private let seen = Mutex(Seen())

    /// Reports to `logger`.
    public init(logger: Logger) {
        self.logger = logger
    }

    /// Up to `limit` records of the rows `rows(after, count)` reads in key order from `after`. A
    /// row whose key fails validation (`record` is nil) is skipped and the page filled up from
    /// the rows after it, so a run of such rows never looks like the end of the listing.
    package static func fill<Row>(limit: Int, after: [UInt8]?, rows: (_ after: [UInt8]?, _ count: Int) throws(StoreError) -> [Row],
                          key: (Row) -> [UInt8]?, record: (Row) -> BlobRecord?) throws(StoreError) -> [BlobRecord] {
        var records: [BlobRecord] = []
        var cursor = after
        while records.count < limit {
            let wanted = limit - records.count
            let page = try rows(cursor, wanted)
            records += page.compactMap(record)
            guard page.count == wanted, let last = page.last.flatMap(key) else { break }
            cursor = last
        }
        return records
    }

    /// The key of a row of `table`, or nil when it fails validation; then the row is reported
    /// to `invalid` (if any: a row read by a valid key's exact bytes cannot fail).
    package static func key(_ bytes: some Collection<UInt8>, in table: String, reportingTo invalid: InvalidKeyRows?) -> BlobKey? {
        do {
            return try BlobKey(validating: bytes)
        } catch {
            invalid?.report(Array(bytes), in: table, reason: error)
            return nil
        }
    }

    /// Records and logs (the first time) a row of `table` whose key `key` fails validation.
    package func report(_ key: [UInt8], in table: String, reason: StoreError) {
        let row = Row(table: table, key: key)
        let isNew = seen.withLock { seen in
            guard !seen.rows.contains(row) else { return false }
            if seen.rows.count < Self.remembered { seen.rows.insert(row) }
            seen.count += 1
            return true
        }
        guard isNew else { return }
        logger.error("Index row with an invalid key skipped", metadata: [
            "index.table": "\(table)", "index.raw_key": "\(Self.escaped(key))", "error": "\(reason)",
        ])
    }

    /// How many such rows were seen.
    public var count: Int { seen.withLock { $0.count } }

    /// The raw keys of the rows of `table` seen (the first `remembered`), in byte order.
    public func keys(in table: String) -> [[UInt8]] {
        seen.withLock { $0.rows.filter { $0.table == table }.map(\.key) }
            .sorted { $0.lexicographicallyPrecedes($1) }
    }

    /// `key` printable: bytes other than visible ASCII, and `%`, as `%XX`.
    public static func escaped(_ key: [UInt8]) -> String {
        var text = ""
        for byte in key {
            if byte > 0x20 && byte < 0x7F && byte != UInt8(ascii: "%") {
                text.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                text += "%" + hex([byte]).uppercased()
            }
        }
        return text
    }
}

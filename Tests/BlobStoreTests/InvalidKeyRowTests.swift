import Foundation
import GRDB
import Testing
@testable import BlobStore
@testable import CatalogPostgres
@testable import CatalogSQLite

@Suite struct InvalidKeyRowTests {
    /// Keys blobd refuses, in byte order, all sorting between "a" and "z".
    static let invalidKeys: [[UInt8]] = [Array("b/\u{0}".utf8), Array("b/../c".utf8), Array("b/./1".utf8)]

    /// A data directory holding "a" and "z", and the rows of `invalidKeys` (copies of "a"'s row)
    /// written behind blobd's back.
    static func directoryWithInvalidRows() throws -> TempDirectory {
        let dir = TempDirectory()
        do {
            let store = try BlobStore(directory: dir.path)
            _ = try store.put([1, 2, 3], as: "a")
            _ = try store.put([4, 5], as: "z")
        }
        let queue = try DatabaseQueue(path: dir.path + "/index.sqlite")
        try queue.write { db in
            for key in invalidKeys {
                try db.execute(sql: """
                    INSERT INTO blobs (key, version, size, sha256, content_type, modified)
                    SELECT ?, version, size, sha256, content_type, modified FROM blobs WHERE key = ?
                    """, arguments: [Data(key), Data("a".utf8)])
            }
        }
        return dir
    }

    @Test func listingsSkipAndCountThemButGoOnPastThem() throws {
        let dir = try Self.directoryWithInvalidRows()
        let store = try BlobStore(directory: dir.path)
        // A page whose every row is invalid must not end the listing.
        #expect(try store.list(after: Array("a".utf8), limit: 1).map(\.key.rawValue) == ["z"])
        #expect(try store.list(limit: 2).map(\.key.rawValue) == ["a", "z"])
        #expect(store.invalidKeys.count == 3)
        #expect(store.invalidKeys.keys(in: "blobs") == Self.invalidKeys)
        // Seen again, they are not counted again.
        _ = try store.list(limit: 10)
        #expect(store.invalidKeys.count == 3)
    }

    @Test func fsckReportsThem() throws {
        let dir = try Self.directoryWithInvalidRows()
        let store = try BlobStore(directory: dir.path)
        let report = try store.check(repair: false)
        #expect(report.checked == 2)
        #expect(report.invalidKeys == Self.invalidKeys)
        #expect(report.unindexed.isEmpty && report.corrupt.isEmpty && report.missing.isEmpty)
        #expect(!report.isClean)
        // Repair leaves them (only a hand can fix them) and fails on nothing.
        #expect(try store.check(repair: true).invalidKeys == Self.invalidKeys)
        #expect(try store.contents(of: "a") == [1, 2, 3])
    }

    @Test func rawKeysAreLoggedPrintable() {
        #expect(InvalidKeyRows.escaped(Array("b/\u{0}%x y\u{7F}é".utf8)) == "b/%00%25x%20y%7F%C3%A9")
    }
}

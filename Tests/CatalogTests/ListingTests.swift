import Testing
@testable import BlobStore

extension CatalogConformance {
    /// Listing: bytewise order, prefixes and cursors cut at any byte, paging.
    @Suite struct Listing {
        /// Keys around the byte boundaries that matter: ASCII neighbours of `/`, every UTF-8 length,
        /// the highest scalars of each length (their encodings end in 0xBF, next to 0xC0..0xFF,
        /// which no key holds), and U+10FFFF (F4 8F BF BF), the highest key byte string.
        static let keys: [String] = [
            "a", "a/", "a/b", "a//c", "a.", "a0", "a~", "A", " lead", "!", "ab", "b", "z",
            "a\u{E9}", "a\u{FF}", "a\u{100}", "a\u{7FF}", "a\u{800}", "a\u{FFFD}", "a\u{FFFF}", "a\u{10000}", "a\u{10FFFF}",
            "a\u{10FFFF}\u{10FFFF}", "\u{10FFFF}", "\u{10FFFF}/x", "\u{1F600}", "\u{E9}t\u{E9}",
            // Around 0x7F (which no key holds) and 0x80: "~" is 0x7E, U+0080 is C2 80, U+00BF C2 BF.
            "~", "a~~", "\u{80}", "a\u{80}", "a\u{80}b", "a\u{BF}", "a\u{C0}", "Z", "aB", "a-b", "a b", "\u{E9}",
        ]

        /// Prefixes and cursors, many of them cut inside a multi-byte character or made of bytes
        /// (0xC0, 0xFF) that no UTF-8 key holds.
        static let cuts: [[UInt8]] = [
            [], [0x00], Array("a".utf8), Array("a/".utf8), [0x61, 0xC3], [0x61, 0xC3, 0xA9], [0x61, 0xC3, 0xFF], [0x61, 0xEF, 0xBF],
            [0x61, 0xEF, 0xBF, 0xBF], [0x61, 0xF4, 0x8F, 0xBF, 0xBF], [0x61, 0xFF], [0x61, 0xFF, 0xFF], [0xF4, 0x8F, 0xBF, 0xBF],
            [0xF4, 0x8F, 0xBF, 0xC0], [0xFF], [0xFF, 0xFF], [0x7E], [0x7F], [0x80], [0xC2], [0xC2, 0x80], [0x61, 0x7E],
            [0x61, 0x7F], [0x61, 0xC2], [0x61, 0xC2, 0x80], [0x61, 0xC2, 0xBF], [0xC3, 0xA9],
        ]

        static func filled(_ backend: Backend) throws -> (any Catalog, [BlobKey]) {
            let catalog = try backend.open()
            for key in keys { try catalog.put(try record(key)) }
            return (catalog, try keys.map { try BlobKey($0) })
        }

        /// The whole listing is in bytewise key order (not Swift's or a collation's string order).
        @Test(arguments: Backend.all)
        func orderIsBytewise(_ backend: Backend) throws {
            let (catalog, keys) = try Self.filled(backend)
            let expected = keys.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
            #expect(try catalog.list(prefix: [], after: nil, limit: 1000).map(\.key) == expected)
            #expect(try catalog.list(prefix: [], after: nil, limit: 0).isEmpty)
            #expect(try catalog.list(prefix: [], after: nil, limit: 5).map(\.key) == Array(expected.prefix(5)))
        }

        /// For every prefix, every starting cursor and several page sizes, paging with `after` =
        /// the last key of the page lists each key that starts with the prefix and sorts after the
        /// cursor exactly once, in order.
        @Test(arguments: Backend.all)
        func pagingListsEveryKeyOnce(_ backend: Backend) throws {
            let (catalog, keys) = try Self.filled(backend)
            let sorted = keys.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
            var failures: [String] = []
            for prefix in Self.cuts {
                for after in [nil] + Self.cuts {
                    let expected = sorted.filter { key in
                        key.bytes.starts(with: prefix) && (after.map { $0.lexicographicallyPrecedes(key.bytes) } ?? true)
                    }
                    for pageSize in [1, 4, 1000] {
                        let listed = try catalog.allKeys(prefix: prefix, after: after, pageSize: pageSize)
                        if listed != expected {
                            failures.append("prefix \(hex(prefix)) after \(after.map { hex($0) } ?? "nil") limit \(pageSize): \(listed)")
                        }
                    }
                }
            }
            #expect(failures.isEmpty, "\(failures.prefix(10))")
        }

        /// A cursor exactly at each key, just after it (key + 0x00), past every key it starts
        /// (key + 0xFF) and just before it (its last byte less one): the listing goes on at the
        /// next key in byte order, under no prefix and under the key's first byte and first two.
        @Test(arguments: Backend.all)
        func cursorsAtAndBetweenKeys(_ backend: Backend) throws {
            let (catalog, keys) = try Self.filled(backend)
            let sorted = keys.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
            var failures: [String] = []
            for key in sorted {
                let bytes = key.bytes
                let before = Array(bytes.dropLast()) + [bytes[bytes.count - 1] - 1]
                for after in [bytes, bytes + [0x00], bytes + [0xFF], before] {
                    for prefix in [[], Array(bytes.prefix(1)), Array(bytes.prefix(2))] {
                        let expected = sorted.filter { $0.bytes.starts(with: prefix) && after.lexicographicallyPrecedes($0.bytes) }
                        let listed = try catalog.list(prefix: prefix, after: after, limit: 1000).map(\.key)
                        if listed != expected { failures.append("prefix \(hex(prefix)) after \(hex(after)): \(listed)") }
                    }
                }
            }
            #expect(failures.isEmpty, "\(failures.prefix(10))")
        }

        /// Every limit from 1 to the number of keys: the first page is the listing's first
        /// `limit` keys, and paging through everything gives the full listing.
        @Test(arguments: Backend.all)
        func everyLimitPagesToTheFullListing(_ backend: Backend) throws {
            let (catalog, keys) = try Self.filled(backend)
            let sorted = keys.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
            var failures: [Int] = []
            for limit in 1...sorted.count + 1 {
                let first = try catalog.list(prefix: [], after: nil, limit: limit).map(\.key)
                if first != Array(sorted.prefix(limit)) { failures.append(limit) }
                if try catalog.allKeys(prefix: [], pageSize: limit) != sorted { failures.append(-limit) }
            }
            #expect(failures.isEmpty, "limits that failed (negative: paging): \(failures)")
        }

        /// Unfinished multipart uploads under each prefix, cut anywhere: those whose key starts
        /// with it, in bytewise key order.
        @Test(arguments: Backend.all)
        func multipartPrefixes(_ backend: Backend) throws {
            let index = try backend.open()
            let keys = try Self.keys.map { try BlobKey($0) }
            for key in keys { try index.insertMultipart(try multipartUpload(key.rawValue), owner: nil, limit: 0) }
            let sorted = keys.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
            var failures: [String] = []
            for prefix in Self.cuts {
                let listed = try index.multipartUploads(prefix: prefix).map(\.key)
                if listed != sorted.filter({ $0.bytes.starts(with: prefix) }) { failures.append("prefix \(hex(prefix)): \(listed)") }
            }
            #expect(failures.isEmpty, "\(failures)")
        }
    }
}

extension CatalogConformance.Listing {
    /// Keys the catalog refuses, in byte order, all sorting between "a" and "z".
    static let invalidKeys: [[UInt8]] = [Array("b/\u{0}".utf8), Array("b/../c".utf8), Array("b/./1".utf8), [0x62, 0xC3, 0x28]]

    /// Rows whose key fails validation (written behind the catalog's back) are skipped by
    /// listings, which fill their page past them, and reported once each.
    @Test(arguments: Backend.all)
    func rowsWithInvalidKeysAreSkippedAndReported(_ backend: Backend) throws {
        let index = try backend.open()
        let a = try record("a"), z = try record("z")
        try index.put(a)
        try index.put(z)
        try index.insertMultipart(try multipartUpload("a"), owner: nil, limit: 0)
        let reported = try backend.writeRawRows(index, a.key, Self.invalidKeys)
        // A page whose every row is invalid does not end the listing.
        #expect(try index.list(prefix: [], after: Array("a".utf8), limit: 1) == [z])
        #expect(try index.list(prefix: [], after: nil, limit: 2) == [a, z])
        #expect(try index.allKeys(prefix: [], pageSize: 1) == [a.key, z.key])
        #expect(try index.list(prefix: Array("b".utf8), after: nil, limit: 10).isEmpty)
        #expect(reported.keys(in: "blobs") == Self.invalidKeys)
        #expect(try index.multipartUploads(prefix: []).map(\.key) == [a.key])
        #expect(reported.keys(in: "multipart_uploads") == Self.invalidKeys)
        // Seen again, they are not counted again.
        _ = try index.list(prefix: [], after: nil, limit: 10)
        #expect(reported.count == Self.invalidKeys.count * 2)
    }
}

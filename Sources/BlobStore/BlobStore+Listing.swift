import BlobCatalog
import BlobContent
import BlobCore
/// One entry of a listing by folders.
public enum ListingEntry: Sendable, Equatable {
    /// A blob directly under the listed prefix.
    case blob(BlobRecord)
    /// A folder: every key that holds the delimiter past the prefix, rolled up into the key up
    /// to and including that delimiter (S3's common prefix).
    case folder([UInt8])

    /// The entry's position in the listing: a blob's key, a folder's prefix.
    public var name: [UInt8] {
        switch self {
        case .blob(let record): record.key.bytes
        case .folder(let prefix): prefix
        }
    }
}

extension BlobStore {
    /// Rows read per index query while folders are rolled up.
    static let listingBatch = 1000

    /// Up to `limit` entries in bytewise key order, of the keys that start with `prefix` and
    /// come after `after`: blobs, and with a non-empty `delimiter` a folder for each group of
    /// keys that hold it past the prefix, as S3's ListObjects answers. `truncated` when more
    /// entries follow the page; the last entry's `name` is then the next page's `after`.
    ///
    /// A cursor that is a folder (as the last entry of a page is) resumes after every key in it,
    /// so a folder is listed once across pages; any other cursor is a key, as in S3. Keys under
    /// a folder are skipped within a batch by comparison and past a batch by moving the cursor:
    /// UTF-8 never holds the byte 0xFF, so `folder + [0xFF]` sorts after every key in it.
    public func list(prefix: [UInt8], delimiter: [UInt8]?, after: [UInt8]?,
                     limit: Int) throws(StoreError) -> (entries: [ListingEntry], truncated: Bool) {
        guard limit > 0 else { return ([], false) }
        // One more than a page tells whether another follows.
        let probe = limit < Int.max ? limit + 1 : limit
        guard let delimiter, !delimiter.isEmpty else {
            let records = try list(prefix: prefix, after: after, limit: probe)
            return (records.prefix(limit).map(ListingEntry.blob), records.count > limit)
        }
        var cursor = after
        if let after, Self.folder(of: after, prefix: prefix, delimiter: delimiter) == after {
            cursor = after + [0xFF]
        }
        let batchSize = min(probe, Self.listingBatch)
        var entries: [ListingEntry] = []
        // The folder being rolled up.
        var rolling: [UInt8]?
        while true {
            let batch = try list(prefix: prefix, after: cursor, limit: batchSize)
            for record in batch {
                let key = record.key.bytes
                if let rolling, key.starts(with: rolling) { continue }
                if entries.count == limit { return (entries, true) }
                if let folder = Self.folder(of: key, prefix: prefix, delimiter: delimiter) {
                    entries.append(.folder(folder))
                    rolling = folder
                } else {
                    entries.append(.blob(record))
                }
            }
            guard batch.count == batchSize, let last = batch.last else { return (entries, false) }
            cursor = last.key.bytes
            if let rolling, let moved = cursor, moved.starts(with: rolling) { cursor = rolling + [0xFF] }
        }
    }

    /// The folder `key` belongs to: the key up to and including the first `delimiter` after
    /// `prefix`, matched byte for byte; nil when the key does not start with the prefix or holds
    /// no delimiter past it.
    public static func folder(of key: [UInt8], prefix: [UInt8], delimiter: [UInt8]) -> [UInt8]? {
        guard !delimiter.isEmpty, key.starts(with: prefix) else { return nil }
        var index = prefix.count
        while index + delimiter.count <= key.count {
            if key[index..<index + delimiter.count].elementsEqual(delimiter) {
                return Array(key[..<(index + delimiter.count)])
            }
            index += 1
        }
        return nil
    }
}

import BlobStore
import HTTPCore
import MicroHTTPD

extension BlobService {
    /// Default page size of the listing.
    static let defaultListLimit = 1000
    /// Largest page size; larger requests are clamped.
    static let maxListLimit = 10_000

    /// GET /v1/blobs?prefix=&delimiter=&after=&limit=: one page in bytewise key order, with a
    /// `next` cursor; with a delimiter, the folders under the prefix in `prefixes`, as S3 lists
    /// common prefixes. `folder` (GET /v1/blobs/photos/): that folder, as `prefix=photos/` with
    /// `delimiter=/` (empty for /v1/blobs/, the top level). `base` (a share link's prefix) goes
    /// before the prefix and the cursor, and is left out of every name answered.
    func list(_ head: HTTPRequestHead, folder: [UInt8]? = nil, base: [UInt8] = []) throws -> HTTPResponse {
        guard let query = PercentEncoding.decodeQuery(head.query ?? []) else {
            throw HTTPError.badRequest("The query string has an invalid percent-encoding.")
        }
        func parameter(_ name: String) -> [UInt8]? { query.first { $0.name == name }?.value }

        let limit = try Self.listLimit(parameter("limit"))
        let prefix = base + (folder ?? parameter("prefix") ?? [])
        let delimiter = folder == nil ? parameter("delimiter") : Array("/".utf8)
        if let delimiter, String(validating: delimiter, as: UTF8.self) == nil {
            throw HTTPError.badRequest("delimiter must be UTF-8.")
        }
        let page = try store.list(prefix: prefix, delimiter: delimiter, after: parameter("after").map { base + $0 }, limit: limit)
        func name(_ bytes: [UInt8]) -> String { String(decoding: bytes.dropFirst(base.count), as: UTF8.self) }
        let next: JSON = page.truncated ? page.entries.last.map { .string(name($0.name)) } ?? .null : .null
        var blobs: [JSON] = []
        var folders: [JSON] = []
        for entry in page.entries {
            switch entry {
            case .blob(let record): blobs.append(Self.json(record, key: name(record.key.bytes)))
            case .folder(let folder): folders.append(.string(name(folder)))
            }
        }
        var members: [(String, JSON)] = [("blobs", .array(blobs))]
        if let delimiter, !delimiter.isEmpty { members.append(("prefixes", .array(folders))) }
        members.append(("next", next))
        return Self.jsonResponse(status: 200, .object(members))
    }

    /// The `limit` parameter: a positive integer, clamped to `maxListLimit`.
    static func listLimit(_ raw: [UInt8]?) throws(HTTPError) -> Int {
        guard let raw else { return defaultListLimit }
        guard !raw.isEmpty, raw.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw .badRequest("limit must be a positive integer.")
        }
        let digits = raw.drop { $0 == 0x30 }
        let value = digits.count > 9 ? maxListLimit : Int(String(decoding: digits, as: UTF8.self)) ?? 0
        guard value > 0 else { throw .badRequest("limit must be a positive integer.") }
        return min(value, maxListLimit)
    }

    /// The folder a GET or HEAD of `/v1/blobs/photos/` lists (`photos/`), or nil when the path
    /// names a blob; `/v1/blobs/` is the top level (an empty prefix).
    static func folder(_ raw: ArraySlice<UInt8>) throws -> [UInt8]? {
        guard raw.last == UInt8(ascii: "/") || raw.isEmpty else { return nil }
        guard raw.count > 1 else {
            if raw.isEmpty { return [] }
            throw HTTPError.badRequest("The key's path has an empty segment; send a slash that belongs to the key as %2F.")
        }
        return try key(raw.dropLast()).bytes + [UInt8(ascii: "/")]
    }
}

import BlobStore
import MicroHTTPD

extension BlobService {
    /// Default page size of the listing.
    static let defaultListLimit = 1000
    /// Largest page size; larger requests are clamped.
    static let maxListLimit = 10_000

    /// GET /v1/blobs?prefix=&after=&limit=: one page in bytewise key order, with a `next` cursor.
    func list(_ head: HTTPRequestHead) throws -> HTTPResponse {
        guard let query = PercentEncoding.decodeQuery(head.query ?? []) else {
            throw HTTPError.badRequest("The query string has an invalid percent-encoding.")
        }
        func parameter(_ name: String) -> [UInt8]? { query.first { $0.name == name }?.value }

        var limit = Self.defaultListLimit
        if let raw = parameter("limit") {
            guard !raw.isEmpty, raw.allSatisfy({ (0x30...0x39).contains($0) }) else {
                throw HTTPError.badRequest("limit must be a positive integer.")
            }
            let digits = raw.drop { $0 == 0x30 }
            let value = digits.count > 9 ? Self.maxListLimit : Int(String(decoding: digits, as: UTF8.self)) ?? 0
            guard value > 0 else { throw HTTPError.badRequest("limit must be a positive integer.") }
            limit = min(value, Self.maxListLimit)
        }
        // One extra row tells whether another page follows.
        let records = try store.list(prefix: parameter("prefix") ?? [], after: parameter("after"), limit: limit + 1)
        let page = records.prefix(limit)
        let next: JSON = records.count > limit ? page.last.map { .string($0.key.rawValue) } ?? .null : .null
        return Self.jsonResponse(status: 200, .object([
            ("blobs", .array(page.map(Self.json))),
            ("next", next),
        ]))
    }
}

import BlobStore
import HTTPCore
import MicroHTTPD

/// DeleteObject and the conditions S3 puts on a delete (If-Match, and the exact modification
/// time and size), which DeleteObjects takes per entry too. The condition is decided inside the
/// catalog's transaction, like a write's.
extension S3Service {
    /// The condition a delete names: `If-Match` (an ETag, a list, or `*`), and
    /// `x-amz-if-match-last-modified-time` (an HTTP-date) and `x-amz-if-match-size` (bytes);
    /// DeleteObjects' entries carry the same as ETag, LastModifiedTime and Size. Nil when
    /// none is given. A malformed time or size is InvalidArgument.
    static func deleteCondition(ifMatch: [String], modified: String?, size: String?) throws(S3Error) -> WriteCondition? {
        guard !ifMatch.isEmpty || modified != nil || size != nil else { return nil }
        var condition = Preconditions(ifMatch: EntityTagCondition.parse(ifMatch, acceptingUnquoted: true)).writeCondition(.content)
        if let modified {
            let text = String(modified.trimmingOWS())
            guard let seconds = HTTPDate.parse(text) ?? Self.iso8601Seconds(text) else {
                throw S3Error(.invalidArgument, "x-amz-if-match-last-modified-time must be an HTTP-date.")
            }
            condition.ifModifiedAt = seconds
        }
        if let size {
            let text = size.trimmingOWS()
            // Digits only (UInt64 would take a sign); an overflow is no size any object has.
            guard !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let bytes = UInt64(text) else {
                throw S3Error(.invalidArgument, "x-amz-if-match-size must be a non-negative integer.")
            }
            condition.ifSize = bytes
        }
        return condition
    }

    /// The conditions of a DeleteObject's head.
    static func deleteCondition(_ head: HTTPRequestHead) throws(S3Error) -> WriteCondition? {
        for name in ["x-amz-if-match-last-modified-time", "x-amz-if-match-size"] where head.values(of: name).count > 1 {
            throw S3Error(.invalidArgument, "\(name) may be given once.")
        }
        return try deleteCondition(ifMatch: head.values(of: "If-Match"), modified: head["x-amz-if-match-last-modified-time"],
                                   size: head["x-amz-if-match-size"])
    }

    /// `2025-01-02T03:04:05Z` or `2025-01-02T03:04:05.678Z` (seconds kept), as XML timestamps
    /// are written; nil otherwise.
    static func iso8601Seconds(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.last == UInt8(ascii: "Z"), bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
              bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":") else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            let digits = bytes[range]
            guard digits.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
            return Int64(String(decoding: digits, as: UTF8.self))
        }
        if bytes.count > 20 {
            guard bytes[19] == UInt8(ascii: "."), number(20..<(bytes.count - 1)) != nil else { return nil }
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), let hour = number(11..<13),
              let minute = number(14..<16), let second = number(17..<19),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else { return nil }
        return HTTPDate.seconds(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
    }

    /// DeleteObject: S3 answers 204 whether or not the key existed, unless the delete names a
    /// condition: then an absent key is NoSuchKey and a condition that fails PreconditionFailed.
    func deleteObject(_ key: BlobKey, if condition: WriteCondition?, events: EventDraft?) throws(StoreError) {
        guard let condition else {
            do {
                try store.delete(key, events: events)
            } catch {
                if error != .notFound { throw error }
            }
            return
        }
        try store.delete(key, if: condition, events: events)
    }
}

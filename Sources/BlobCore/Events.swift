/// A webhook target and the subscription (its S3 `configurationId`) that sends an event there.
public struct EventTarget: Sendable, Hashable {
    /// The `--notify-webhook` name.
    public var target: String
    /// The subscription's id.
    public var configurationID: String

    public init(target: String, configurationID: String) {
        self.target = target
        self.configurationID = configurationID
    }
}

/// What the HTTP layer knows of an event before the catalog commits the change it reports: the
/// targets whose subscriptions match, the event's name and who asked. With the record stored or
/// removed it makes the facts of each target's event (`facts(for:millis:)`), which the catalog
/// writes as one outbox row per target in the transaction that makes the change. A request that
/// matches no subscription carries no draft, and writes nothing more.
public struct EventDraft: Sendable, Equatable {
    /// S3's name without `s3:`: `ObjectCreated:Put`, `ObjectRemoved:Delete`, ...
    public var name: String
    public var targets: [EventTarget]
    /// The caller's principal name (`key:ID`, `anonymous`, ...).
    public var principal: String
    public var requestID: String
    public var sourceIP: String
    /// `v1`, `tus` or `s3`.
    public var dialect: String
    public var node: String
    public var region: String

    public init(name: String, targets: [EventTarget], principal: String, requestID: String, sourceIP: String,
                dialect: String, node: String, region: String = "us-east-1") {
        self.name = name
        self.targets = targets
        self.principal = principal
        self.requestID = requestID
        self.sourceIP = sourceIP
        self.dialect = dialect
        self.node = node
        self.region = region
    }

    /// What each of `targets` is told about `record` (stored, or removed for `ObjectRemoved:*`)
    /// at `millis` since the epoch: cheap to make (no rendering), so that a commit can store it
    /// and the delivery render the message (`EventFacts.message(sequencer:)`).
    public func facts(for record: BlobRecord, millis: Int64) -> [EventFacts] {
        targets.map { fact(for: record, target: $0, millis: millis) }
    }

    /// What `target` is told about `record` at `millis`.
    private func fact(for record: BlobRecord, target: EventTarget, millis: Int64) -> EventFacts {
        EventFacts(name: name, principal: principal, requestID: requestID, sourceIP: sourceIP, dialect: dialect, node: node,
                   region: region, configurationID: target.configurationID, key: record.key.rawValue, size: record.size,
                   eTag: name.hasPrefix("ObjectRemoved") ? "" : WriteCondition.TagScheme.content.tag(of: record),
                   sha256: record.sha256, version: record.version, versioned: record.versioned, millis: millis)
    }

    /// The S3 event message (`{"Records": [...]}`) reporting `record` to `target`, at `millis`
    /// since the epoch; `sequencer` grows per key (without one the message has an empty one).
    public func payload(for record: BlobRecord, target: EventTarget, sequencer: Int64?, millis: Int64) -> String {
        fact(for: record, target: target, millis: millis).message(sequencer: sequencer)
    }

    /// The bucket of a key: its first segment (nil when it has no slash, as a content address).
    public static func bucket(of key: BlobKey) -> Substring? {
        let raw = key.rawValue
        guard let slash = raw.firstIndex(of: "/") else { return nil }
        return raw[..<slash]
    }
}

/// A (target, key) pair: an event's place in the per-key order (a key's events reach a target
/// one at a time, in order).
public struct EventKey: Hashable, Sendable {
    public var target: String
    public var key: [UInt8]

    public init(target: String, key: [UInt8]) {
        self.target = target
        self.key = key
    }
}

/// An event of the outbox, as the catalog keeps it until it is delivered.
public struct OutboxEvent: Sendable, Equatable {
    /// The (target, key) whose order the event keeps.
    public var orderKey: EventKey { EventKey(target: target, key: key) }

    public var id: Int64
    public var target: String
    public var bucket: String
    public var key: [UInt8]
    /// The event's name (`ObjectCreated:Put`).
    public var event: String
    /// The message sent, `{"Records": [...]}`, as the catalog read it.
    public var message: EventMessage
    /// The message sent, rendered (each read renders it again from facts).
    public var payload: String { message.text(sequencer: id) }
    /// The message sent, rendered in UTF-8 (as a request's body takes it).
    public var payloadBytes: [UInt8] { message.bytes(sequencer: id) }
    /// Milliseconds since the epoch.
    public var created: Int64
    public var attempts: Int
    public var nextAttempt: Int64

    /// An event whose message is rendered already (its sequencer filled in).
    public init(id: Int64, target: String, bucket: String, key: [UInt8], event: String, payload: String, created: Int64,
                attempts: Int, nextAttempt: Int64) {
        self.init(id: id, target: target, bucket: bucket, key: key, event: event, message: .rendered(payload), created: created,
                  attempts: attempts, nextAttempt: nextAttempt)
    }

    public init(id: Int64, target: String, bucket: String, key: [UInt8], event: String, message: EventMessage, created: Int64,
                attempts: Int, nextAttempt: Int64) {
        self.id = id
        self.target = target
        self.bucket = bucket
        self.key = key
        self.event = event
        self.message = message
        self.created = created
        self.attempts = attempts
        self.nextAttempt = nextAttempt
    }
}

extension OutboxEvent {
    /// Equal when they say the same, whether their messages were rendered or are facts.
    public static func == (a: OutboxEvent, b: OutboxEvent) -> Bool {
        a.id == b.id && a.target == b.target && a.bucket == b.bucket && a.key == b.key && a.event == b.event
            && a.created == b.created && a.attempts == b.attempts && a.nextAttempt == b.nextAttempt && a.payload == b.payload
    }
}

/// The little JSON an event message needs, without Foundation.
public enum EventJSON {
    /// A JSON string literal.
    public static func string(_ text: String) -> String {
        var json = JSONBytes(capacity: text.utf8.count + 2)
        json.string(text)
        return json.text
    }

    private static let upperHex = Array("0123456789ABCDEF".utf8)

    /// A key as S3 event messages carry it: URL-encoded, a space as `+`, `/` kept.
    public static func s3KeyEncoding(_ key: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(key.utf8.count)
        for byte in key.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "*"), UInt8(ascii: "/"):
                out.append(byte)
            case UInt8(ascii: " "):
                out.append(UInt8(ascii: "+"))
            default:
                out += [UInt8(ascii: "%"), upperHex[Int(byte >> 4)], upperHex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `payload` with its empty sequencer (a message made before its id was known) set to
    /// `sequencer(id)`. JSON escapes every quote inside a string, so the empty sequencer's text
    /// occurs nowhere else in a message.
    public static func fillingSequencer(_ payload: String, with id: Int64) -> String {
        let blank = Array(#""sequencer":"""#.utf8), bytes = Array(payload.utf8)
        // From the end: the sequencer is in the message's last lines, before the blobd section.
        guard bytes.count >= blank.count,
              let start = stride(from: bytes.count - blank.count, through: 0, by: -1)
                .first(where: { bytes[$0] == blank[0] && bytes[$0..<($0 + blank.count)].elementsEqual(blank) }) else {
            return payload
        }
        let end = start + blank.count - 1  // before the closing quote
        return String(decoding: bytes[..<end] + Array(sequencer(id).utf8) + bytes[end...], as: UTF8.self)
    }

    /// A sequencer: 16 upper-case hex digits, so that they sort as they grow.
    public static func sequencer(_ value: Int64) -> String {
        var bytes: [UInt8] = []
        appendSequencer(value, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `sequencer(value)`'s 16 digits, appended.
    static func appendSequencer(_ value: Int64, to bytes: inout [UInt8]) {
        let bits = UInt64(bitPattern: value)
        for shift in stride(from: 60, through: 0, by: -4) {
            bytes.append(upperHex[Int((bits >> UInt64(shift)) & 0x0F)])
        }
    }

    /// `2026-11-27T07:23:22.123Z`.
    public static func isoTime(millis: Int64) -> String {
        var bytes: [UInt8] = []
        appendISOTime(millis: millis, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `isoTime(millis:)`'s text, appended digit by digit.
    static func appendISOTime(millis: Int64, to bytes: inout [UInt8]) {
        let seconds = millis >= 0 ? millis / 1000 : (millis - 999) / 1000
        let fraction = millis - seconds * 1000
        let days = seconds >= 0 ? seconds / 86400 : (seconds - 86399) / 86400
        let rest = seconds - days * 86400
        let (year, month, day) = civil(fromDays: days)
        func digits(_ value: Int64, _ count: Int) {
            var divisor: Int64 = 1
            for _ in 1..<count { divisor *= 10 }
            while divisor > 0 {
                bytes.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
                divisor /= 10
            }
        }
        bytes += String(year).utf8
        bytes.append(UInt8(ascii: "-"))
        digits(month, 2)
        bytes.append(UInt8(ascii: "-"))
        digits(day, 2)
        bytes.append(UInt8(ascii: "T"))
        digits(rest / 3600, 2)
        bytes.append(UInt8(ascii: ":"))
        digits(rest % 3600 / 60, 2)
        bytes.append(UInt8(ascii: ":"))
        digits(rest % 60, 2)
        bytes.append(UInt8(ascii: "."))
        digits(fraction, 3)
        bytes.append(UInt8(ascii: "Z"))
    }

    /// Howard Hinnant's days-to-civil.
    static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

/// JSON appended to one byte buffer.
struct JSONBytes {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int) {
        bytes.reserveCapacity(capacity)
    }

    var text: String { String(decoding: bytes, as: UTF8.self) }

    /// JSON text as it is.
    mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    mutating func raw(_ text: String) {
        var text = text
        text.withUTF8 { bytes.append(contentsOf: $0) }
    }

    /// `EventJSON.isoTime(millis:)` as a string literal.
    mutating func isoTime(millis: Int64) {
        bytes.append(UInt8(ascii: "\""))
        EventJSON.appendISOTime(millis: millis, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    /// `EventJSON.sequencer(_:)` as a string literal.
    mutating func sequencer(_ value: Int64) {
        bytes.append(UInt8(ascii: "\""))
        EventJSON.appendSequencer(value, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    /// A string literal: quotes, backslashes and control characters escaped.
    mutating func string(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        defer { bytes.append(UInt8(ascii: "\"")) }
        // Most text needs no escape: scanned and appended at once from its UTF-8 storage.
        var text = text
        let plain = text.withUTF8 { utf8 in
            guard !utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else { return false }
            bytes.append(contentsOf: utf8)
            return true
        }
        guard !plain else { return }
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes += [UInt8(ascii: "\\"), byte]
            case UInt8(ascii: "\n"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case UInt8(ascii: "\r"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case UInt8(ascii: "\t"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case ..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            default: bytes.append(byte)
            }
        }
    }
}

/// One event as the outbox keeps it: the facts of its S3 event message, without the sequencer
/// (the event's id, known once the row is written). The message is rendered from them when the
/// event is read for delivery (`message(sequencer:)`), off the commit's path.
public struct EventFacts: Sendable, Equatable {
    /// S3's name without `s3:`: `ObjectCreated:Put`, `ObjectRemoved:Delete`, ...
    public var name: String
    public var principal: String
    public var requestID: String
    public var sourceIP: String
    /// `v1`, `tus` or `s3`.
    public var dialect: String
    public var node: String
    public var region: String
    /// The subscription's id (S3 `configurationId`).
    public var configurationID: String
    /// The blob's key, bucket first.
    public var key: String
    public var size: UInt64
    /// The object's ETag, unquoted (empty for `ObjectRemoved:*`, whose messages carry none).
    public var eTag: String
    public var sha256: [UInt8]
    public var version: String
    /// A version written while its bucket's versioning was enabled (messages name it).
    public var versioned: Bool
    /// When the event happened, in milliseconds since the epoch.
    public var millis: Int64

    public init(name: String, principal: String, requestID: String, sourceIP: String, dialect: String, node: String, region: String,
                configurationID: String, key: String, size: UInt64, eTag: String, sha256: [UInt8], version: String, versioned: Bool,
                millis: Int64) {
        self.name = name
        self.principal = principal
        self.requestID = requestID
        self.sourceIP = sourceIP
        self.dialect = dialect
        self.node = node
        self.region = region
        self.configurationID = configurationID
        self.key = key
        self.size = size
        self.eTag = eTag
        self.sha256 = sha256
        self.version = version
        self.versioned = versioned
        self.millis = millis
    }

    /// What a catalog row keeps of the facts besides the event's name, key, time and digest, in
    /// one text: principal, request id, source IP, dialect, node, region, configuration id,
    /// ETag, version, versioned (`1` or `0`) and size, each as its length in UTF-8 bytes, a
    /// colon and itself (`3:abc`), so that any text fits and reading it back is one pass.
    /// One value to bind in a commit rather than eleven; `init(packed:...)` reads it.
    public var packed: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256)
        for text in [principal, requestID, sourceIP, dialect, node, region, configurationID, eTag, version, versioned ? "1" : "0",
                     String(size)] {
            bytes += String(text.utf8.count).utf8
            bytes.append(UInt8(ascii: ":"))
            bytes += text.utf8
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Facts from `packed` text, with the row's own columns; nil when the text is not what
    /// `packed` writes.
    public init?(packed: String, name: String, key: String, sha256: [UInt8], millis: Int64) {
        let bytes = Array(packed.utf8)
        var fields: [String] = [], at = 0
        while at < bytes.count, fields.count < 11 {
            guard let colon = bytes[at...].firstIndex(of: UInt8(ascii: ":")), colon - at <= 19,
                  let length = Int(String(decoding: bytes[at..<colon], as: UTF8.self)), length >= 0,
                  length <= bytes.count - colon - 1 else { return nil }
            fields.append(String(decoding: bytes[(colon + 1)..<(colon + 1 + length)], as: UTF8.self))
            at = colon + 1 + length
        }
        guard at == bytes.count, fields.count == 11, let size = UInt64(fields[10]) else { return nil }
        self.init(name: name, principal: fields[0], requestID: fields[1], sourceIP: fields[2], dialect: fields[3], node: fields[4],
                  region: fields[5], configurationID: fields[6], key: key, size: size, eTag: fields[7], sha256: sha256,
                  version: fields[8], versioned: fields[9] == "1", millis: millis)
    }

    /// The S3 event message (`{"Records": [...]}`); without a `sequencer` it has an empty one,
    /// for `EventJSON.fillingSequencer`.
    public func message(sequencer: Int64?) -> String {
        String(decoding: messageBytes(sequencer: sequencer), as: UTF8.self)
    }

    /// The S3 event message in UTF-8, as a request's body takes it.
    public func messageBytes(sequencer: Int64?) -> [UInt8] {
        let slash = key.firstIndex(of: "/")
        let bucket = slash.map { String(key[..<$0]) } ?? key
        let objectKey = slash.map { String(key[key.index(after: $0)...]) } ?? ""
        var json = JSONBytes(capacity: 1024)
        json.raw("{\"Records\":[{\"eventVersion\":\"2.1\",\"eventSource\":\"blobd:s3\",\"awsRegion\":")
        json.string(region)
        json.raw(",\"eventTime\":")
        json.isoTime(millis: millis)
        json.raw(",\"eventName\":")
        json.string(name)
        json.raw(",\"userIdentity\":{\"principalId\":")
        json.string(principal)
        json.raw("},\"requestParameters\":{\"sourceIPAddress\":")
        json.string(sourceIP)
        json.raw("},\"responseElements\":{\"x-amz-request-id\":")
        json.string(requestID)
        json.raw(",\"x-amz-id-2\":")
        json.string(node)
        json.raw("},\"s3\":{\"s3SchemaVersion\":\"1.0\",\"configurationId\":")
        json.string(configurationID)
        json.raw(",\"bucket\":{\"name\":")
        json.string(bucket)
        json.raw(",\"ownerIdentity\":{\"principalId\":\"blobd\"},\"arn\":")
        json.string("arn:aws:s3:::" + bucket)
        json.raw("},\"object\":{\"key\":")
        json.string(EventJSON.s3KeyEncoding(objectKey))
        if !name.hasPrefix("ObjectRemoved") {
            json.raw(",\"size\":")
            json.raw(String(size))
            json.raw(",\"eTag\":")
            json.string(eTag)
        }
        if versioned {
            json.raw(",\"versionId\":")
            json.string(version)
        }
        json.raw(",\"sequencer\":")
        if let sequencer { json.sequencer(sequencer) } else { json.string("") }
        json.raw("}},\"blobd\":{\"sha256\":")
        json.string(hex(sha256))
        json.raw(",\"dialect\":")
        json.string(dialect)
        json.raw(",\"node\":")
        json.string(node)
        json.raw(",\"version\":")
        json.string(version)
        json.raw("}}]}")
        return json.bytes
    }
}

/// An outbox event's message: rendered already, or its facts, rendered when it is sent
/// (`text(sequencer:)`), on the delivery's thread rather than the catalog's.
public enum EventMessage: Sendable, Equatable {
    /// The message with its sequencer filled in.
    case rendered(String)
    case facts(EventFacts)

    /// The message, with `sequencer` when it is made from facts.
    public func text(sequencer: Int64) -> String {
        switch self {
        case .rendered(let text): text
        case .facts(let facts): facts.message(sequencer: sequencer)
        }
    }

    /// The message in UTF-8, with `sequencer` when it is made from facts.
    public func bytes(sequencer: Int64) -> [UInt8] {
        switch self {
        case .rendered(let text): Array(text.utf8)
        case .facts(let facts): facts.messageBytes(sequencer: sequencer)
        }
    }
}

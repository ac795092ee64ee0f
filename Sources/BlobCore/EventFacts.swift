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

    /// The S3 event message (`{"Records": [...]}`); without a `sequencer` it has an empty one,
    /// for `EventJSON.fillingSequencer`.
    public func message(sequencer: Int64?) -> String {
        let slash = key.firstIndex(of: "/")
        let bucket = slash.map { String(key[..<$0]) } ?? key
        let objectKey = slash.map { String(key[key.index(after: $0)...]) } ?? ""
        var json = JSONBytes(capacity: 1024)
        json.raw("{\"Records\":[{\"eventVersion\":\"2.1\",\"eventSource\":\"blobd:s3\",\"awsRegion\":")
        json.string(region)
        json.raw(",\"eventTime\":")
        json.string(EventJSON.isoTime(millis: millis))
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
        json.string(sequencer.map(EventJSON.sequencer) ?? "")
        json.raw("}},\"blobd\":{\"sha256\":")
        json.string(hex(sha256))
        json.raw(",\"dialect\":")
        json.string(dialect)
        json.raw(",\"node\":")
        json.string(node)
        json.raw(",\"version\":")
        json.string(version)
        json.raw("}}]}")
        return json.text
    }
}

/// A bucket of the S3 dialect. Its objects are the blobs whose keys start with `NAME/`.
public struct Bucket: Sendable, Equatable {
    public var name: String
    /// Creation time, seconds since the epoch.
    public var created: Int64
    /// The region CreateBucket named (its LocationConstraint); nil for the default, us-east-1.
    public var region: String?

    public init(name: String, created: Int64, region: String? = nil) {
        self.name = name
        self.created = created
        self.region = region
    }
}

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

    /// S3's bucket naming rules, which every dialect applies (one bucket namespace): 3–63 of
    /// lowercase letters, digits, `.` and `-`, starting and ending with a letter or digit; no
    /// `..`, `.-` or `-.`; not an IPv4 address; none of the prefixes and suffixes AWS reserves.
    public static func isValidName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        func alphanumeric(_ byte: UInt8) -> Bool { (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) }
        guard (3...63).contains(bytes.count), let first = bytes.first, let last = bytes.last,
              alphanumeric(first), alphanumeric(last),
              bytes.allSatisfy({ alphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") }) else { return false }
        if ["..", ".-", "-."].contains(where: { name.contains($0) }) { return false }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        if labels.count == 4, labels.allSatisfy({ !$0.isEmpty && $0.utf8.allSatisfy { (0x30...0x39).contains($0) } }) { return false }
        return !reservedPrefixes.contains(where: name.hasPrefix) && !reservedSuffixes.contains(where: name.hasSuffix)
    }

    /// Name prefixes AWS reserves.
    public static let reservedPrefixes = ["xn--", "sthree-", "amzn-s3-demo-"]
    /// Name suffixes AWS reserves.
    public static let reservedSuffixes = ["-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"]
}

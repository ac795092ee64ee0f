import BlobStore

/// New credentials: ids, bearer tokens, S3 access key ids and secrets, from the system's
/// cryptographic random source (`SystemRandomNumberGenerator` reads getrandom(2)).
public enum KeyFactory {
    /// `count` random bytes.
    public static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    /// A key's id: `k` and 96 random bits in hex.
    public static func keyID() -> String { "k" + hex(randomBytes(12)) }

    /// A share link's id: 128 random bits in hex.
    public static func shareID() -> String { hex(randomBytes(16)) }

    /// The id of a bootstrap file's key, which follows from its name (so that applying the file
    /// again finds it): `b` and the first 96 bits of SHA-256 of the name.
    public static func bootstrapID(name: String) -> String {
        "b" + hex(SHA256Hasher.hash(Array(("bootstrap key " + name).utf8)).prefix(12))
    }

    /// A bearer token: `blobd_` and 256 random bits in hex.
    public static func token() -> String { "blobd_" + hex(randomBytes(32)) }

    /// An S3 access key id: `BK` and 18 characters of A-Z and 2-7 (90 bits).
    public static func accessKeyID() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)
        return "BK" + String(decoding: randomBytes(18).map { alphabet[Int($0 & 31)] }, as: UTF8.self)
    }

    /// An S3 secret access key: 40 characters of A-Z, a-z, 0-9, `+` and `/` (240 bits).
    public static func secret() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        return String(decoding: randomBytes(40).map { alphabet[Int($0 & 63)] }, as: UTF8.self)
    }
}

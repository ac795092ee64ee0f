/// HMAC-SHA256 (RFC 2104) on OpenSSL's SHA-256: OpenSSL 3's one-shot `HMAC()` looks its
/// digest up through the provider on every call, which costs more than the two hashes. S3's
/// SigV4 and the Standard Webhooks signatures of events use it.
public func hmacSHA256(key: [UInt8], _ data: [UInt8]) -> [UInt8] {
    let blockSize = 64
    let key = key.count > blockSize ? SHA256Hasher.hash(key) : key
    var inner = SHA256Hasher(), outer = SHA256Hasher()
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: blockSize) { pad in
        for i in 0..<blockSize { pad[i] = (i < key.count ? key[i] : 0) ^ 0x36 }
        inner.update(UnsafeRawBufferPointer(pad))
        for i in 0..<blockSize { pad[i] = (i < key.count ? key[i] : 0) ^ 0x5C }
        outer.update(UnsafeRawBufferPointer(pad))
    }
    data.withUnsafeBytes { inner.update($0) }
    inner.finalize().withUnsafeBytes { outer.update($0) }
    return outer.finalize()
}

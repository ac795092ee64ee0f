import Testing
@testable import BlobStore

/// A resumable upload's SHA-256 goes on across appends whether each one is hashed on the
/// writer's thread (under 1 MiB) or on the `BodyHasher`'s second thread (1 MiB and more, or of
/// unknown length), and the state it saves is byte for byte the one an inline hash saves.
@Suite struct UploadHashStateTests {
    @Test func savedStateIsTheInlineOneAcrossThreadedAppends() throws {
        let dir = TempDirectory()
        let store = try BlobStore(directory: dir.path)
        let mib = 1 << 20
        // Appends just under, at, over 1 MiB, one of unknown length, and the rest.
        let sizes: [(count: Int, declared: UInt64?)] = [(mib - 1, UInt64(mib - 1)), (mib, UInt64(mib)), (mib + 1, UInt64(mib + 1)),
                                                        (70_001, nil), (12_345, 12_345)]
        let total = sizes.reduce(0) { $0 + $1.count }
        let body = (0..<total).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 11) }
        let created = try store.createUpload(length: UInt64(total), metadata: "", key: BlobKey("tus/state"),
                                             attributes: BlobAttributes(), lifetime: 3600)
        var inline = SHA256Hasher()
        var offset = 0
        for (count, declared) in sizes {
            let append = try store.beginAppend(to: created.id, at: UInt64(offset), lifetime: 3600, bodySize: declared)
            let piece = Array(body[offset..<offset + count])
            for start in stride(from: 0, to: count, by: 65_536) {
                try piece[start..<min(count, start + 65_536)].withUnsafeBytes { try append.write($0) }
            }
            let saved = try append.finish()
            offset += count
            piece.withUnsafeBytes { inline.update($0) }
            #expect(saved.offset == UInt64(offset))
            if offset < total {
                #expect(saved.hashState == inline.state, "after \(offset) bytes")
                #expect(try store.upload(created.id).hashState == inline.state)
            } else {
                #expect(saved.completedKey == (try BlobKey("tus/state")))
            }
        }
        let record = try #require(try store.record(for: BlobKey("tus/state")))
        #expect(record.sha256 == SHA256Hasher.hash(body))
        #expect(try store.contents(of: "tus/state") == body)
    }

    /// A client gone mid-request keeps what arrived: the saved state is that of those bytes.
    @Test func abandonedThreadedAppendSavesTheStateOfWhatArrived() throws {
        let dir = TempDirectory()
        let store = try BlobStore(directory: dir.path)
        let body = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 40_503 >> 7) }
        let created = try store.createUpload(length: UInt64(body.count), metadata: "", key: nil, attributes: BlobAttributes(),
                                             lifetime: 3600)
        let append = try store.beginAppend(to: created.id, at: 0, lifetime: 3600, bodySize: UInt64(body.count))
        let arrived = (1 << 20) + 300_001
        try body[..<arrived].withUnsafeBytes { try append.write($0) }
        append.abandon()
        let saved = try store.upload(created.id)
        #expect(saved.offset == UInt64(arrived))
        var inline = SHA256Hasher()
        body[..<arrived].withUnsafeBytes { inline.update($0) }
        #expect(saved.hashState == inline.state)
        let rest = try store.beginAppend(to: created.id, at: UInt64(arrived), lifetime: 3600)
        try body[arrived...].withUnsafeBytes { try rest.write($0) }
        let done = try rest.finish()
        let key = try #require(done.completedKey)
        #expect(key == (try BlobKey(hex(SHA256Hasher.hash(body)))))
        #expect(try store.contents(of: key.rawValue) == body)
    }
}

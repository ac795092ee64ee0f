import BlobHTTP
import BlobStore
import CZlib
import Foundation

/// Decodes an `aws-chunked` body while it streams: `HEX[;chunk-signature=SIG]\r\nDATA\r\n`…
/// `0[;chunk-signature=SIG]\r\n`, then trailer lines and an empty line. The framing is never
/// stored. With `STREAMING-AWS4-HMAC-SHA256-PAYLOAD` every chunk's signature is checked (each
/// signs the previous one, seeded by the request's); with `STREAMING-UNSIGNED-PAYLOAD-TRAILER`
/// the trailer's `x-amz-checksum-*` is checked. Nothing is committed unless all of it holds.
final class AWSChunkedDecoder {
    /// What the chunk signatures are checked with; nil when they are not (open access, or an
    /// unsigned mode).
    struct Signing {
        let key: [UInt8]
        let amzDate: String
        let scope: String
        var previous: String
    }

    private enum State {
        case sizeLine
        case data(remaining: UInt64)
        case dataEnd
        case trailer
        case done
    }

    private var state = State.sizeLine
    private var line: [UInt8] = []
    private var signing: Signing?
    private var chunkSignature: String?
    private var chunkHasher = SHA256Hasher()
    private let checksum: TrailerChecksum?
    private var trailers: [String: String] = [:]
    private(set) var decodedLength: UInt64 = 0
    private let write: (UnsafeRawBufferPointer) throws -> Void

    /// The decoded length the request declared (x-amz-decoded-content-length).
    private let declaredLength: UInt64?

    /// `trailer`: the one `x-amz-trailer` the request declared, if any.
    init(signing: Signing?, trailer: String?, declaredLength: UInt64?,
         write: @escaping (UnsafeRawBufferPointer) throws -> Void) throws(S3Error) {
        self.signing = signing
        self.declaredLength = declaredLength
        self.write = write
        if let trailer {
            guard let checksum = TrailerChecksum(name: trailer.lowercased()) else {
                throw S3Error(.invalidRequest, "The trailer \(trailer) is not an x-amz-checksum-* blobd verifies (crc32, crc32c, sha1, sha256).")
            }
            self.checksum = checksum
        } else {
            self.checksum = nil
        }
    }

    var isComplete: Bool {
        if case .done = state { return true }
        return false
    }

    /// Feeds body bytes; throws at the first framing, signature or checksum error.
    func feed(_ bytes: UnsafeRawBufferPointer) throws {
        var index = 0
        while index < bytes.count {
            switch state {
            case .sizeLine, .trailer:
                let byte = bytes[index]
                index += 1
                line.append(byte)
                guard line.count <= 4096 else { throw S3Error(.invalidRequest, "An aws-chunked line is too long.") }
                if line.count >= 2 && line[line.count - 2] == 0x0D && byte == 0x0A {
                    let text = String(decoding: line.dropLast(2), as: UTF8.self)
                    line.removeAll(keepingCapacity: true)
                    if case .sizeLine = state { try startChunk(text) } else { try trailerLine(text) }
                }
            case .data(let remaining):
                let count = Int(min(UInt64(bytes.count - index), remaining))
                let slice = UnsafeRawBufferPointer(rebasing: bytes[index..<(index + count)])
                if signing != nil { chunkHasher.update(slice) }
                checksum?.update(slice)
                try write(slice)
                decodedLength += UInt64(count)
                index += count
                state = remaining == UInt64(count) ? .dataEnd : .data(remaining: remaining - UInt64(count))
            case .dataEnd:
                line.append(bytes[index])
                index += 1
                if line.count == 2 {
                    guard line == [0x0D, 0x0A] else { throw S3Error(.invalidRequest, "An aws-chunked chunk does not end with CRLF.") }
                    line.removeAll(keepingCapacity: true)
                    try endChunk()
                    state = .sizeLine
                }
            case .done:
                throw S3Error(.invalidRequest, "Bytes follow the end of the aws-chunked body.")
            }
        }
    }

    private func startChunk(_ text: String) throws {
        let parts = text.split(separator: ";", maxSplits: 1)
        guard let sizeText = parts.first, let size = UInt64(sizeText, radix: 16) else {
            throw S3Error(.invalidRequest, "An aws-chunked size line is malformed.")
        }
        chunkSignature = nil
        if parts.count == 2 {
            let extensionPart = parts[1].split(separator: "=", maxSplits: 1)
            if extensionPart.count == 2, extensionPart[0] == "chunk-signature" { chunkSignature = String(extensionPart[1]) }
        }
        chunkHasher = SHA256Hasher()
        if let declaredLength, decodedLength + size > declaredLength {
            throw S3Error(.invalidRequest, "The aws-chunked body is longer than its x-amz-decoded-content-length.")
        }
        if size == 0 {
            try endChunk()
            state = .trailer
        } else {
            state = .data(remaining: size)
        }
    }

    /// Checks the signature of the chunk just read.
    private func endChunk() throws {
        guard var signing else { return }
        guard let presented = chunkSignature else {
            throw S3Error(.signatureDoesNotMatch, "An aws-chunked chunk lacks its chunk-signature.")
        }
        let stringToSign = ["AWS4-HMAC-SHA256-PAYLOAD", signing.amzDate, signing.scope, signing.previous,
                            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", hex(chunkHasher.finalize())]
            .joined(separator: "\n")
        let expected = hex(SigV4.hmac(signing.key, Array(stringToSign.utf8)))
        guard AccessPolicy.constantTimeEqual(Array(expected.utf8), Array(presented.lowercased().utf8)) else {
            throw S3Error(.signatureDoesNotMatch, "The chunk signature we calculated does not match the one you provided.")
        }
        signing.previous = expected
        self.signing = signing
    }

    private func trailerLine(_ text: String) throws {
        guard !text.isEmpty else {
            if let checksum {
                guard let presented = trailers[checksum.name] else {
                    throw S3Error(.invalidRequest, "The declared trailer \(checksum.name) did not arrive.")
                }
                guard presented == checksum.base64() else {
                    throw S3Error(.badDigest, "The \(checksum.name) you specified did not match the calculated checksum.")
                }
            }
            state = .done
            return
        }
        guard let colon = text.firstIndex(of: ":") else { throw S3Error(.invalidRequest, "An aws-chunked trailer line is malformed.") }
        trailers[text[..<colon].lowercased()] = String(text[text.index(after: colon)...]).trimmingOWS().description
    }
}

/// An `x-amz-checksum-*` computed as the bytes stream.
final class TrailerChecksum {
    enum Algorithm {
        case crc32, crc32c, sha1, sha256
    }

    let name: String
    private let algorithm: Algorithm
    private var crc: UInt32 = 0
    private var sha1 = SHA1Hasher()
    private var sha256 = SHA256Hasher()

    init?(name: String) {
        switch name {
        case "x-amz-checksum-crc32": algorithm = .crc32
        case "x-amz-checksum-crc32c": algorithm = .crc32c
        case "x-amz-checksum-sha1": algorithm = .sha1
        case "x-amz-checksum-sha256": algorithm = .sha256
        default: return nil
        }
        self.name = name
    }

    func update(_ bytes: UnsafeRawBufferPointer) {
        switch algorithm {
        case .crc32:
            crc = UInt32(CZlib.crc32(UInt(crc), bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt32(bytes.count)))
        case .crc32c:
            crc = CRC32C.update(crc, bytes)
        case .sha1:
            sha1.update(bytes)
        case .sha256:
            sha256.update(bytes)
        }
    }

    /// The checksum as S3 writes it: base64 of the big-endian bytes.
    func base64() -> String {
        let digest: [UInt8]
        switch algorithm {
        case .crc32, .crc32c: digest = [UInt8(crc >> 24), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)]
        case .sha1: digest = sha1.finalize()
        case .sha256: digest = sha256.finalize()
        }
        return Data(digest).base64EncodedString()
    }
}

/// CRC-32C (Castagnoli), table-driven. Written here because Debian has no small, well-kept C
/// library for it (zlib has only CRC-32).
enum CRC32C {
    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? (value >> 1) ^ 0x82F6_3B78 : value >> 1 }
        return value
    }

    static func update(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var value = ~crc
        for byte in bytes { value = table[Int((value ^ UInt32(byte)) & 0xFF)] ^ (value >> 8) }
        return ~value
    }
}

import HTTPCore
import BlobStore
import Foundation
import Access

/// Decodes an `aws-chunked` body while it streams: `HEX[;chunk-signature=SIG]\r\nDATA\r\n`…
/// `0[;chunk-signature=SIG]\r\n`, then trailer lines and an empty line. The framing is never
/// stored. With `STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER]` every chunk's signature is
/// checked (each signs the previous one, seeded by the request's), and so is the trailer's
/// `x-amz-trailer-signature`. The trailer's `x-amz-checksum-*` is checked by the caller, against
/// `trailers`, once the bytes are hashed. Nothing is committed unless all of it holds.
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
    /// Whether trailer lines may follow the last chunk (a `*-TRAILER` mode).
    private let hasTrailer: Bool
    /// The trailer's fields by lowercased name, once the body is complete.
    private(set) var trailers: [String: String] = [:]
    /// The trailer lines as they are signed: `name:value\n` each.
    private var canonicalTrailer: [(name: String, value: String)] = []
    private(set) var decodedLength: UInt64 = 0
    private let write: (UnsafeRawBufferPointer) throws -> Void

    /// The decoded length the request declared (x-amz-decoded-content-length).
    private let declaredLength: UInt64?

    /// `hasTrailer`: the mode ends with trailer lines (`x-amz-trailer` names them).
    init(signing: Signing?, hasTrailer: Bool, declaredLength: UInt64?, write: @escaping (UnsafeRawBufferPointer) throws -> Void) {
        self.signing = signing
        self.hasTrailer = hasTrailer
        self.declaredLength = declaredLength
        self.write = write
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
        // 1 to 16 hex digits (UInt64 alone would also take a sign, and a longer size cannot be
        // sent).
        guard let sizeText = parts.first, (1...16).contains(sizeText.utf8.count), sizeText.utf8.allSatisfy(Self.isHexDigit),
              let size = UInt64(sizeText, radix: 16) else {
            throw S3Error(.invalidRequest, "An aws-chunked size line is malformed.")
        }
        chunkSignature = nil
        if parts.count == 2 {
            let extensionPart = parts[1].split(separator: "=", maxSplits: 1)
            if extensionPart.count == 2, extensionPart[0] == "chunk-signature" { chunkSignature = String(extensionPart[1]) }
        }
        chunkHasher = SHA256Hasher()
        // The client's size may be anything up to 2^64-1: the sum is checked, never trapped on.
        let (end, overflow) = decodedLength.addingReportingOverflow(size)
        if let declaredLength, overflow || end > declaredLength {
            throw S3Error(.invalidRequest, "The aws-chunked body is longer than its x-amz-decoded-content-length.")
        }
        if size == 0 {
            try endChunk()
            state = .trailer
        } else {
            state = .data(remaining: size)
        }
    }

    /// Trailer fields kept at most (a checksum and its signature are what S3 sends).
    static let maxTrailerFields = 16

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
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
            try checkTrailerSignature()
            state = .done
            return
        }
        guard hasTrailer else { throw S3Error(.invalidRequest, "This payload mode has no trailer, but trailer lines follow the last chunk.") }
        guard let colon = text.firstIndex(of: ":") else { throw S3Error(.invalidRequest, "An aws-chunked trailer line is malformed.") }
        let name = text[..<colon].lowercased()
        let value = String(text[text.index(after: colon)...]).trimmingOWS().description
        guard trailers.count < Self.maxTrailerFields else { throw S3Error(.invalidRequest, "The aws-chunked trailer has too many fields.") }
        guard trailers.updateValue(value, forKey: name) == nil else {
            throw S3Error(.invalidRequest, "The trailer field \(name) comes twice.")
        }
        if name != "x-amz-trailer-signature" { canonicalTrailer.append((name, value)) }
    }

    /// A signed mode's trailer carries `x-amz-trailer-signature`: HMAC of
    /// `AWS4-HMAC-SHA256-TRAILER`, the date, the scope, the last chunk's signature and the
    /// SHA-256 of the trailer's `name:value\n` lines.
    private func checkTrailerSignature() throws {
        guard hasTrailer, let signing else { return }
        guard let presented = trailers["x-amz-trailer-signature"] else {
            throw S3Error(.signatureDoesNotMatch, "The trailer lacks its x-amz-trailer-signature.")
        }
        let canonical = canonicalTrailer.sorted { $0.name < $1.name }.map { "\($0.name):\($0.value)\n" }.joined()
        let stringToSign = ["AWS4-HMAC-SHA256-TRAILER", signing.amzDate, signing.scope, signing.previous,
                            hex(SHA256Hasher.hash(Array(canonical.utf8)))].joined(separator: "\n")
        let expected = hex(SigV4.hmac(signing.key, Array(stringToSign.utf8)))
        guard AccessPolicy.constantTimeEqual(Array(expected.utf8), Array(presented.lowercased().utf8)) else {
            throw S3Error(.signatureDoesNotMatch, "The trailer signature we calculated does not match the one you provided.")
        }
    }
}

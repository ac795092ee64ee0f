import BlobStore
import MicroHTTPD

/// A `multipart/byteranges` body (RFC 9110 §14.6) read straight from the blob file: part
/// headers are small byte arrays, part contents are pread into libmicrohttpd's block buffer.
public final class MultipartBody: HTTPBodyReader {
    private enum Segment: Sendable {
        case text([UInt8])
        case file(offset: UInt64)
    }

    /// Each segment with the body offset it starts at, in order.
    private let segments: [(start: UInt64, length: UInt64, segment: Segment)]
    private let blob: OpenBlob
    /// The body's total length (for Content-Length).
    public let length: UInt64
    /// The `Content-Type` of the whole response.
    public let contentType: String

    public init(blob: OpenBlob, ranges: [ByteRange]) {
        let boundary = "blobd-" + hex((0..<12).map { _ in UInt8.random(in: .min ... .max) })
        let size = blob.record.size
        var segments: [(start: UInt64, length: UInt64, segment: Segment)] = []
        var offset: UInt64 = 0
        func append(_ segment: Segment, length: UInt64) {
            segments.append((offset, length, segment))
            offset += length
        }
        func appendText(_ text: String) {
            let bytes = Array(text.utf8)
            append(.text(bytes), length: UInt64(bytes.count))
        }
        for (i, range) in ranges.enumerated() {
            appendText((i == 0 ? "" : "\r\n") + "--\(boundary)\r\nContent-Type: \(blob.record.contentType)\r\n"
                + "Content-Range: \(range.contentRange(size: size))\r\n\r\n")
            append(.file(offset: range.start), length: range.length)
        }
        appendText("\r\n--\(boundary)--\r\n")
        self.segments = segments
        self.length = offset
        self.blob = blob
        self.contentType = "multipart/byteranges; boundary=\(boundary)"
    }

    public func read(at position: UInt64, into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        // The last segment starting at or before `position`.
        var low = 0, high = segments.count - 1
        while low < high {
            let mid = (low + high + 1) / 2
            if segments[mid].start <= position { low = mid } else { high = mid - 1 }
        }
        let (start, length, segment) = segments[low]
        guard position >= start, position < start + length else { return nil }
        let within = position - start
        let count = Int(min(UInt64(buffer.count), length - within))
        switch segment {
        case .text(let bytes):
            let source = bytes[Int(within)..<Int(within) + count]
            source.withUnsafeBytes { buffer.copyMemory(from: $0) }
            return count
        case .file(let offset):
            guard let read = try? blob.read(at: offset + within, into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<count])),
                  read > 0 else { return nil }
            return read
        }
    }
}

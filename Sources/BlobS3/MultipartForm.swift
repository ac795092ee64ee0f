import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A streaming `multipart/form-data` reader (RFC 7578) for S3's POST Object: the fields before
/// the file are collected (each at most `maxFieldBytes`, at most `maxFields` of them), the
/// file part's bytes are handed on as they arrive, never buffered beyond one delimiter's
/// length, and whatever follows the file part is ignored, as S3 does.
struct MultipartForm {
    /// What the reader finds, in order.
    enum Event {
        /// A field before the file: its name (as sent) and value.
        case field(name: String, value: [UInt8])
        /// The file part begins: its `filename` and `Content-Type`.
        case fileStart(filename: String, contentType: String?)
        /// Bytes of the file.
        case fileBytes(UnsafeRawBufferPointer)
        /// The file part ended; nothing after it is read.
        case fileEnd
    }

    typealias Handler = (Event) throws -> Void

    struct Malformed: Error {
        let reason: String
    }

    static let maxFieldBytes = 20 * 1024
    static let maxFields = 100
    static let maxHeaderBytes = 8 * 1024

    private enum State {
        /// Before the first delimiter.
        case preamble
        /// After a delimiter: CRLF (a part follows) or `--` (the end).
        case afterDelimiter
        case headers
        case field(name: String)
        case file
        case done
    }

    /// `\r\n--BOUNDARY`; the first delimiter is matched without its CRLF.
    private let delimiter: [UInt8]
    private var state = State.preamble
    private var buffer: [UInt8] = []
    private var fields = 0
    /// Whether the file part has ended (the form is complete for S3).
    private(set) var fileEnded = false

    init(boundary: String) {
        delimiter = Array("\r\n--\(boundary)".utf8)
        // The preamble is matched as if a CRLF preceded the body.
        buffer = [13, 10]
    }

    /// The boundary of a `multipart/form-data` Content-Type, nil for another type.
    static func boundary(contentType: String) -> String? {
        let parts = contentType.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard parts.first?.lowercased() == "multipart/form-data" else { return nil }
        for part in parts.dropFirst() where part.lowercased().hasPrefix("boundary=") {
            var value = String(part.dropFirst("boundary=".count))
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 { value = String(value.dropFirst().dropLast()) }
            guard (1...70).contains(value.utf8.count) else { return nil }
            return value
        }
        return nil
    }

    /// Takes the next bytes of the body.
    mutating func feed(_ bytes: UnsafeRawBufferPointer, _ handle: Handler) throws {
        if case .done = state { return }
        buffer.append(contentsOf: bytes)
        while try step(handle) {}
    }

    /// Runs one step on the buffered bytes; false when more bytes are needed.
    private mutating func step(_ handle: Handler) throws -> Bool {
        switch state {
        case .done:
            buffer = []
            return false
        case .preamble:
            guard case .found(let at) = findDelimiter() else {
                // Keep only what could still start a delimiter.
                if buffer.count > delimiter.count + 80 { buffer.removeFirst(buffer.count - delimiter.count - 80) }
                return false
            }
            buffer.removeFirst(at + delimiter.count)
            state = .afterDelimiter
            return true
        case .afterDelimiter:
            guard buffer.count >= 2 else { return false }
            if buffer[0] == UInt8(ascii: "-") && buffer[1] == UInt8(ascii: "-") {
                state = .done
                return true
            }
            // Transport padding (spaces, tabs) may precede the CRLF.
            guard let end = find([13, 10]) else {
                if buffer.count > 256 { throw Malformed(reason: "a delimiter line is too long") }
                return false
            }
            buffer.removeFirst(end + 2)
            state = .headers
            return true
        case .headers:
            guard let end = find([13, 10, 13, 10]) else {
                if buffer.count > Self.maxHeaderBytes { throw Malformed(reason: "a part's header is too long") }
                return false
            }
            let text = String(decoding: buffer[..<end], as: UTF8.self)
            buffer.removeFirst(end + 4)
            try startPart(text, handle)
            return true
        case .field(let name):
            return try fieldStep(name, handle)
        case .file:
            return try fileStep(handle)
        }
    }

    /// A field's value, once its delimiter is in.
    private mutating func fieldStep(_ name: String, _ handle: Handler) throws -> Bool {
        guard case .found(let at) = findDelimiter() else {
            if buffer.count > Self.maxFieldBytes + delimiter.count + 80 {
                throw Malformed(reason: "the field '\(name)' is larger than \(Self.maxFieldBytes) bytes")
            }
            return false
        }
        guard at <= Self.maxFieldBytes else { throw Malformed(reason: "the field '\(name)' is larger than \(Self.maxFieldBytes) bytes") }
        if !fileEnded { try handle(.field(name: name, value: Array(buffer[..<at]))) }
        buffer.removeFirst(at + delimiter.count)
        state = .afterDelimiter
        return true
    }

    /// The file's bytes up to its delimiter, or up to a tail that could begin one. The parts
    /// after it are still read: their fields are ignored (as S3 ignores them), a second file is
    /// malformed.
    private mutating func fileStep(_ handle: Handler) throws -> Bool {
        switch findDelimiter() {
        case .found(let at):
            try emit(at, handle)
            try handle(.fileEnd)
            fileEnded = true
            buffer.removeFirst(delimiter.count)
            state = .afterDelimiter
            return true
        case .undecided(let candidate):
            try emit(candidate ?? max(0, buffer.count - (delimiter.count - 1)), handle)
            return false
        }
    }

    /// Hands the first `count` buffered bytes to the file.
    private mutating func emit(_ count: Int, _ handle: Handler) throws {
        guard count > 0 else { return }
        try buffer.withUnsafeBytes { try handle(.fileBytes(UnsafeRawBufferPointer(rebasing: $0[..<count]))) }
        buffer.removeFirst(count)
    }

    /// A part's header block: a field, or the file (the part named `file`).
    private mutating func startPart(_ header: String, _ handle: Handler) throws {
        var disposition: String?, contentType: String?
        for line in header.split(separator: "\r\n", omittingEmptySubsequences: true) {
            guard let colon = line.firstIndex(of: ":") else { throw Malformed(reason: "a part's header line has no colon") }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if name == "content-disposition" { disposition = value }
            if name == "content-type" { contentType = value }
        }
        guard let disposition, let parameters = Self.parameters(disposition), let name = parameters["name"] else {
            throw Malformed(reason: "a part has no Content-Disposition: form-data with a name")
        }
        if name.lowercased() == "file" {
            guard !fileEnded else { throw Malformed(reason: "the form has more than one file part") }
            state = .file
            try handle(.fileStart(filename: parameters["filename"] ?? "", contentType: contentType))
        } else {
            fields += 1
            guard fields <= Self.maxFields else { throw Malformed(reason: "the form has more than \(Self.maxFields) fields") }
            state = .field(name: name)
        }
    }

    /// `form-data; name="a"; filename="b"` as a dictionary (lowercased parameter names).
    static func parameters(_ disposition: String) -> [String: String]? {
        var result: [String: String] = [:]
        var rest = Substring(disposition)
        guard let kind = rest.split(separator: ";", maxSplits: 1).first,
              kind.trimmingCharacters(in: .whitespaces).lowercased() == "form-data" else { return nil }
        rest = rest.dropFirst(kind.count)
        while let semicolon = rest.firstIndex(of: ";") {
            rest = rest[rest.index(after: semicolon)...].drop { $0 == " " || $0 == "\t" }
            guard let equals = rest.firstIndex(of: "=") else { return nil }
            let name = rest[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            rest = rest[rest.index(after: equals)...]
            var value = ""
            if rest.first == "\"" {
                rest = rest.dropFirst()
                var escaped = false
                while let character = rest.first {
                    rest = rest.dropFirst()
                    if escaped { value.append(character); escaped = false; continue }
                    if character == "\\" { escaped = true; continue }
                    if character == "\"" { break }
                    value.append(character)
                }
            } else {
                let end = rest.firstIndex(of: ";") ?? rest.endIndex
                value = rest[..<end].trimmingCharacters(in: .whitespaces)
                rest = rest[end...]
            }
            result[name] = value
        }
        return result
    }

    private enum Search {
        /// A delimiter starts here.
        case found(Int)
        /// None yet; one might start at the position given, once more bytes arrive.
        case undecided(Int?)
    }

    /// The first delimiter in the buffer: `\r\n--BOUNDARY` followed by `--`, or by optional
    /// spaces and tabs and CRLF. The same bytes followed by anything else are content.
    private func findDelimiter() -> Search {
        var from = 0
        while let at = find(delimiter, from: from) {
            var index = at + delimiter.count
            guard index < buffer.count else { return .undecided(at) }
            if buffer[index] == UInt8(ascii: "-") {
                guard index + 1 < buffer.count else { return .undecided(at) }
                if buffer[index + 1] == UInt8(ascii: "-") { return .found(at) }
            } else {
                while index < buffer.count, index - at < delimiter.count + 64, buffer[index] == 0x20 || buffer[index] == 0x09 {
                    index += 1
                }
                guard index + 1 < buffer.count else { return .undecided(at) }
                if buffer[index] == 13 && buffer[index + 1] == 10 { return .found(at) }
            }
            from = at + 1
        }
        return .undecided(nil)
    }

    /// Where `needle` starts in the buffer from `from`: memchr to each candidate first byte, then a compare.
    private func find(_ needle: [UInt8], from: Int = 0) -> Int? {
        buffer.withUnsafeBytes { haystack in
            needle.withUnsafeBytes { pattern in
                guard let base = haystack.baseAddress, let needleBase = pattern.baseAddress, let first = pattern.first,
                      haystack.count >= pattern.count else { return nil }
                var offset = from
                let last = haystack.count - pattern.count
                while offset <= last {
                    guard let hit = memchr(base + offset, Int32(first), last - offset + 1) else { return nil }
                    let at = base.distance(to: UnsafeRawPointer(hit))
                    if memcmp(base + at, needleBase, pattern.count) == 0 { return at }
                    offset = at + 1
                }
                return nil
            }
        }
    }
}

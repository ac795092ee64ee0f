import Foundation
import HTTPTesting
import LiveBlobd

/// One part of a multipart/byteranges body.
struct BodyPart: Equatable {
    let contentRange: String
    let contentType: String
    let bytes: [UInt8]
}

/// Parses a multipart/byteranges body independently of blobd (RFC 2046 framing).
func parseMultipart(_ body: [UInt8], contentType: String) throws -> [BodyPart] {
    guard let range = contentType.range(of: "boundary=") else { throw TestFailure("no boundary in \(contentType)") }
    let boundary = Array(("--" + contentType[range.upperBound...].trimmingCharacters(in: CharacterSet(charactersIn: "\""))).utf8)
    var parts: [BodyPart] = []
    func find(_ needle: [UInt8], from start: Int) -> Int? {
        var i = start
        while i + needle.count <= body.count {
            if body[i] == needle[0] && Array(body[i..<i + needle.count]) == needle { return i }
            i += 1
        }
        return nil
    }
    guard let first = find(boundary, from: 0) else { throw TestFailure("no first boundary") }
    var index = first + boundary.count
    while true {
        if body[index..<min(index + 2, body.count)].elementsEqual("--".utf8) { break }  // close delimiter
        guard body[index..<min(index + 2, body.count)].elementsEqual("\r\n".utf8) else { throw TestFailure("bad delimiter line") }
        index += 2
        guard let headerEnd = find(Array("\r\n\r\n".utf8), from: index) else { throw TestFailure("no part headers") }
        let headerText = String(decoding: body[index..<headerEnd], as: UTF8.self)
        var headers: [String: String] = [:]
        for line in headerText.components(separatedBy: "\r\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let contentStart = headerEnd + 4
        guard let next = find(Array("\r\n".utf8) + boundary, from: contentStart) else { throw TestFailure("no next boundary") }
        parts.append(BodyPart(contentRange: headers["content-range"] ?? "", contentType: headers["content-type"] ?? "",
                              bytes: Array(body[contentStart..<next])))
        index = next + 2 + boundary.count
    }
    return parts
}

import Foundation
import LiveBlobd

/// One HTTP response as curl saw it (the final one, after any 100 Continue).
struct CurlResponse {
    let status: Int
    let headers: [(name: String, value: String)]
    let body: [UInt8]

    /// The first value of a header (case-insensitive).
    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    var text: String { String(decoding: body, as: UTF8.self) }

    /// The body parsed as a JSON object.
    var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
    }
}

/// Runs curl with `arguments` (URL included) and returns the final response.
func curl(_ arguments: [String], stdin: [UInt8]? = nil) throws -> CurlResponse {
    let dir = TempDir("curl")
    let headerFile = dir.path + "/headers", bodyFile = dir.path + "/body"
    let result = try run("/usr/bin/curl", ["-sS", "--path-as-is", "-D", headerFile, "-o", bodyFile] + arguments, stdin: stdin)
    guard result.status == 0 else { throw TestFailure("curl \(arguments) failed (\(result.status)): \(result.stderr)") }
    let raw = (try? String(contentsOfFile: headerFile, encoding: .utf8)) ?? ""
    // The header file holds every response (100 Continue first); keep the last block.
    let blocks = raw.components(separatedBy: "\r\n\r\n").filter { !$0.isEmpty }
    guard let last = blocks.last else { throw TestFailure("no response from curl \(arguments)") }
    var lines = last.components(separatedBy: "\r\n")
    let statusLine = lines.removeFirst().split(separator: " ")
    let status = statusLine.count > 1 ? Int(statusLine[1]) ?? 0 : 0
    let headers = lines.compactMap { line -> (String, String)? in
        guard let colon = line.firstIndex(of: ":") else { return nil }
        return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
    }
    let body = [UInt8]((try? Data(contentsOf: URL(fileURLWithPath: bodyFile))) ?? Data())
    return CurlResponse(status: status, headers: headers, body: body)
}

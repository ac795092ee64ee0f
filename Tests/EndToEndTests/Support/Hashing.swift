import Foundation
import LiveBlobd

/// SHA-256 through sha256sum, so the tests check blobd against an independent implementation.
func sha256Hex(_ bytes: [UInt8]) -> String {
    let result = try? run("/usr/bin/sha256sum", [], stdin: bytes)
    return String(String(decoding: result?.stdout ?? [], as: UTF8.self).prefix(64))
}

func sha256Base64(_ bytes: [UInt8]) -> String {
    let hex = Array(sha256Hex(bytes).utf8)
    var raw: [UInt8] = []
    var i = 0
    while i + 1 < hex.count {
        raw.append(UInt8(String(decoding: hex[i...i + 1], as: UTF8.self), radix: 16) ?? 0)
        i += 2
    }
    return Data(raw).base64EncodedString()
}

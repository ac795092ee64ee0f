import BlobStore
import HTTPCore
import Foundation
import MicroHTTPD

/// Parsing of the tus 1.0.0 request headers that carry structure.
enum TusHeaders {
    /// `Upload-Metadata`: comma-separated `key base64value` pairs (the value may be absent).
    static func metadata(_ value: String) throws(HTTPError) -> [String: [UInt8]] {
        var pairs: [String: [UInt8]] = [:]
        for member in value.split(separator: ",", omittingEmptySubsequences: false) {
            let item = member.trimmingOWS()
            if item.isEmpty && value.trimmingOWS().isEmpty { continue }
            let parts = item.split(separator: " ", omittingEmptySubsequences: false)
            guard let name = parts.first, !name.isEmpty, parts.count <= 2, pairs[String(name)] == nil else {
                throw .badRequest("Upload-Metadata must be comma-separated 'key base64value' pairs with distinct keys.")
            }
            var bytes: [UInt8] = []
            if parts.count == 2 {
                guard let decoded = Data(base64Encoded: String(parts[1])) else {
                    throw .badRequest("The Upload-Metadata value of '\(name)' is not base64.")
                }
                bytes = Array(decoded)
            }
            pairs[String(name)] = bytes
        }
        return pairs
    }

    /// `head` with `Upload-Metadata` made from `metadata` (a hook's `ChangeFileInfo.MetaData`).
    static func replacingMetadata(of head: HTTPRequestHead, with metadata: [String: String]) -> HTTPRequestHead {
        let value = metadata.sorted { $0.key < $1.key }
            .map { $0.value.isEmpty ? $0.key : $0.key + " " + Data($0.value.utf8).base64EncodedString() }
            .joined(separator: ",")
        let fields = head.headers.filter { !$0.name.caseInsensitiveEquals("Upload-Metadata") } + [(name: "Upload-Metadata", value: value)]
        return HTTPRequestHead(method: head.method, path: head.path, version: head.version, headers: fields, query: head.query,
                               peer: head.peer, isStrictlyFramed: head.isStrictlyFramed, annotation: head.annotation)
    }

    /// `Upload-Checksum: sha1 BASE64` or `sha256 BASE64`.
    static func checksum(_ value: String) throws(HTTPError) -> UploadAppend.Checksum {
        let parts = value.trimmingOWS().split(separator: " ")
        guard parts.count == 2, let digest = Data(base64Encoded: String(parts[1])) else {
            throw .badRequest("Upload-Checksum must be 'ALGORITHM BASE64DIGEST'.")
        }
        switch (parts[0], digest.count) {
        case ("sha1", 20): return .sha1(Array(digest))
        case ("sha256", 32): return .sha256(Array(digest))
        case ("sha1", _), ("sha256", _): throw .badRequest("The Upload-Checksum digest has the wrong length for \(parts[0]).")
        default: throw .badRequest("Upload-Checksum algorithm '\(parts[0])' is not supported; use sha1 or sha256.")
        }
    }

    /// A non-negative decimal number (Upload-Length, Upload-Offset) of at most 2^63-1: the index
    /// keeps sizes as signed 64-bit integers, and no file can be larger. Anything else is a 400.
    static func number(_ value: String, _ name: String) throws(HTTPError) -> UInt64 {
        guard !value.isEmpty, value.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let number = UInt64(value),
              number <= UInt64(Int64.max) else {
            throw .badRequest("\(name) must be a non-negative integer of at most 9223372036854775807.")
        }
        return number
    }
}

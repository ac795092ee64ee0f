import BlobStore
import Foundation

/// `Content-Digest` / `Repr-Digest` (RFC 9530): a structured-field dictionary of
/// algorithm → byte sequence, e.g. `sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:`.
public enum DigestField {
    /// Why a digest field was rejected.
    public enum Failure: Error, Equatable {
        /// Not a dictionary of byte sequences.
        case malformed
        /// A sha-256 value that is not 32 bytes.
        case wrongLength
    }

    /// The SHA-256 in the field, nil if the field names only algorithms blobd does not verify.
    public static func sha256(in value: String) throws(Failure) -> [UInt8]? {
        var found: [UInt8]?
        for member in value.split(separator: ",", omittingEmptySubsequences: false) {
            let item = member.trimmingOWS()
            guard let equals = item.firstIndex(of: "=") else { throw .malformed }
            let algorithm = item[..<equals]
            // Parameters (`;…`) after the value carry nothing blobd needs.
            let valuePart = item[item.index(after: equals)...].split(separator: ";", maxSplits: 1,
                                                                      omittingEmptySubsequences: false)[0]
            guard !algorithm.isEmpty, algorithm.allSatisfy({ $0.isLowercase || $0.isNumber || "-_.*".contains($0) }),
                  valuePart.count >= 2, valuePart.first == ":", valuePart.last == ":",
                  let bytes = Data(base64Encoded: String(valuePart.dropFirst().dropLast())) else {
                throw .malformed
            }
            if algorithm == "sha-256" {
                guard bytes.count == 32 else { throw .wrongLength }
                found = Array(bytes)
            }
        }
        return found
    }

    /// `sha-256=:BASE64:` for a digest.
    public static func format(sha256: [UInt8]) -> String {
        "sha-256=:" + base64(sha256) + ":"
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Standard base64 with padding (RFC 4648 §4), as structured-field byte sequences use; on
    /// every GET, so written straight into the string.
    public static func base64(_ bytes: [UInt8]) -> String {
        String(unsafeUninitializedCapacity: (bytes.count + 2) / 3 * 4) { out in
            var i = 0
            var k = 0
            while k < bytes.count {
                let b0 = bytes[k], b1 = k + 1 < bytes.count ? bytes[k + 1] : 0, b2 = k + 2 < bytes.count ? bytes[k + 2] : 0
                out[i] = alphabet[Int(b0 >> 2)]
                out[i + 1] = alphabet[Int((b0 & 0x03) << 4 | b1 >> 4)]
                out[i + 2] = k + 1 < bytes.count ? alphabet[Int((b1 & 0x0F) << 2 | b2 >> 6)] : UInt8(ascii: "=")
                out[i + 3] = k + 2 < bytes.count ? alphabet[Int(b2 & 0x3F)] : UInt8(ascii: "=")
                i += 4
                k += 3
            }
            return i
        }
    }
}

extension DigestField.Failure: ClassifiedFailure {
    public var failureClass: FailureClass { .badRequest }
}

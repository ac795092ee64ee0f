import BlobCore
import MicroHTTPD

/// RFC 9112's framing rules, checked on every request head of every dialect before anything
/// else: a request that breaks them could be read differently by a proxy in front (smuggling).
public enum HTTPFraming {
    /// RFC 9112 framing rules that protect against request smuggling.
    public static func check(_ head: HTTPRequestHead) throws(HTTPError) {
        // RFC 9112 §2.2 and §5.2: libmicrohttpd 0.9.75 takes a bare LF, a NUL and obs-fold.
        if !head.isStrictlyFramed {
            throw .malformedMessage("Every line of the request head must end in CRLF, with no NUL byte and no folded field line.")
        }
        // libmicrohttpd keeps `Name : value` as the name "Name " (RFC 9112 §5.1: answer 400).
        if head.headers.contains(where: { !Self.isToken($0.name) }) {
            throw .malformedMessage("A header field name is empty or holds characters a token cannot (whitespace before the colon?).")
        }
        // RFC 9110 §5.5: a bare CR (or any other control byte but HTAB) in a field value.
        if head.headers.contains(where: { $0.value.utf8.contains(where: Self.isControl) }) {
            throw .malformedMessage("A header field value holds a control character (a bare CR?).")
        }
        if head.path.contains(where: { Self.isControl($0) || $0 == 0x20 }) || (head.query ?? []).contains(where: { Self.isControl($0) || $0 == 0x20 }) {
            throw .malformedMessage("The request target holds a control character or a space.")
        }
        let codings = head.values(of: "Transfer-Encoding")
        // RFC 9112 §6.1: Transfer-Encoding in an HTTP/1.0 request means faulty framing.
        if !codings.isEmpty && head.version != "HTTP/1.1" {
            throw .malformedMessage("Transfer-Encoding needs HTTP/1.1.")
        }
        if !codings.isEmpty && !(codings.count == 1 && codings[0].lowercased() == "chunked") {
            // libmicrohttpd frames a body as chunked only for exactly one field `chunked`; any other
            // spelling of it (spaces around, a repeat) would be read as a body of unknown length.
            guard codings.joined(separator: ",").trimmingOWS().lowercased() != "chunked" else {
                throw .malformedMessage("Transfer-Encoding must be one field whose value is exactly 'chunked'.")
            }
            throw .notImplemented("The only transfer coding blobd accepts is chunked.")
        }
        let lengths = head.values(of: "Content-Length")
        if lengths.count > 1 { throw .malformedMessage("The request has more than one Content-Length.") }
        if let length = lengths.first, length.isEmpty || !length.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
            throw .malformedMessage("Content-Length must be a non-negative decimal number.")
        }
        if !lengths.isEmpty && head["Transfer-Encoding"] != nil {
            throw .malformedMessage("The request has both Content-Length and Transfer-Encoding.")
        }
        if head.values(of: "Host").count > 1 { throw .malformedMessage("The request has more than one Host.") }
    }

    /// A control byte other than HTAB (RFC 5234 CTL).
    public static func isControl(_ byte: UInt8) -> Bool {
        (byte < 0x20 && byte != 0x09) || byte == 0x7F
    }

    /// RFC 9110 §5.6.2: `token = 1*tchar`.
    public static func isToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"):
                true
            default:
                Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
            }
        }
    }
}

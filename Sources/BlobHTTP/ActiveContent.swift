/// Headers that keep a stored blob from running as a page of blobd's origin: any writer can
/// store `text/html` or `image/svg+xml`, and a browser that opened it would run its script
/// with the origin's cookies and storage. Every blob answer (both dialects) says `nosniff`, so
/// a browser never guesses a type more active than the one given; a type a browser would run
/// also gets `Content-Security-Policy: sandbox`, which makes the document a unique origin with
/// no script, as S3-compatible stores behind a shared origin (and GitHub's raw files) do. Other
/// types keep no sandbox: a sandboxed PDF does not open in Chrome's viewer.
public enum ActiveContent {
    /// The headers for a blob answer whose `Content-Type` is `contentType`.
    public static func headers(contentType: String?) -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = [("X-Content-Type-Options", "nosniff")]
        if isActive(contentType) { headers.append(("Content-Security-Policy", "sandbox")) }
        return headers
    }

    /// True for a media type a browser renders as a document that may run script: HTML, XHTML,
    /// SVG and any other XML (which may hold XHTML or an XSLT), JavaScript, and for a missing or
    /// unparseable type. A value with a comma is a list to a browser, which takes one of its
    /// types (Fetch's "extract a MIME type" takes the last), so it counts as active whatever it
    /// lists, as does an essence that is not `token/token`.
    public static func isActive(_ contentType: String?) -> Bool {
        guard let contentType, !contentType.contains(",") else { return true }
        let essence = contentType.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first
            .map { $0.trimmingOWS().lowercased() } ?? ""
        guard let slash = essence.firstIndex(of: "/"), slash != essence.startIndex, essence.index(after: slash) != essence.endIndex else {
            return true
        }
        let type = essence[..<slash], subtype = essence[essence.index(after: slash)...]
        guard type.utf8.allSatisfy(isTokenByte), subtype.utf8.allSatisfy(isTokenByte) else { return true }
        return activeTypes.contains(essence) || subtype.hasSuffix("+xml")
            || subtype.contains("javascript") || subtype.contains("ecmascript") || (type == "multipart" && subtype == "x-mixed-replace")
    }

    /// RFC 9110's tchar.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
            || "!#$%&'*+-.^_`|~".utf8.contains(byte)
    }

    /// Full types a browser runs that the rules of `isActive` do not catch by their subtype.
    static let activeTypes: Set<String> = ["text/html", "application/xml", "text/xml", "text/xsl", "application/x-shockwave-flash"]
}

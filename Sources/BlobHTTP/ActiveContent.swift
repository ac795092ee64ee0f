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
    /// unparseable type.
    public static func isActive(_ contentType: String?) -> Bool {
        guard let contentType else { return true }
        let essence = contentType.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first
            .map { $0.trimmingOWS().lowercased() } ?? ""
        guard let slash = essence.firstIndex(of: "/"), slash != essence.startIndex, essence.index(after: slash) != essence.endIndex else {
            return true
        }
        let type = essence[..<slash], subtype = essence[essence.index(after: slash)...]
        return activeTypes.contains(essence) || subtype.hasSuffix("+xml")
            || subtype.contains("javascript") || subtype.contains("ecmascript") || (type == "multipart" && subtype == "x-mixed-replace")
    }

    /// Full types a browser runs that the rules of `isActive` do not catch by their subtype.
    static let activeTypes: Set<String> = ["text/html", "application/xml", "text/xml", "text/xsl", "application/x-shockwave-flash"]
}

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
        guard var contentType else { return true }
        // On the bytes, without a String or Foundation's search: every blob answer asks.
        return contentType.withUTF8 { bytes in
            guard !bytes.contains(UInt8(ascii: ",")) else { return true }
            let isOWS = { (byte: UInt8) in byte == 0x20 || byte == 0x09 }
            var end = bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.count
            var start = 0
            while start < end, isOWS(bytes[start]) { start += 1 }
            while end > start, isOWS(bytes[end - 1]) { end -= 1 }
            guard let slash = bytes[start..<end].firstIndex(of: UInt8(ascii: "/")), slash > start, slash + 1 < end,
                  bytes[start..<slash].allSatisfy(isTokenByte), bytes[(slash + 1)..<end].allSatisfy(isTokenByte) else {
                return true
            }
            let essence = bytes[start..<end], subtype = bytes[(slash + 1)..<end]
            return activeTypes.contains { equalIgnoringCase(essence, $0) } || equalIgnoringCase(subtype.suffix(4), xmlSuffix)
                || scriptWords.contains { word in
                    subtype.count >= word.count
                        && (subtype.startIndex...(subtype.endIndex - word.count)).contains {
                            equalIgnoringCase(subtype[$0..<($0 + word.count)], word)
                        }
                }
        }
    }

    /// Full types a browser runs that the subtype rules of `isActive` do not catch, lowercase.
    static let activeTypes: [[UInt8]] = ["text/html", "application/xml", "text/xml", "text/xsl",
                                         "application/x-shockwave-flash", "multipart/x-mixed-replace"].map { Array($0.utf8) }
    /// A subtype ending so is XML (SVG, XHTML, ...), which may hold script.
    static let xmlSuffix = Array("+xml".utf8)
    /// Subtypes holding one of these are script (`javascript`, `x-ecmascript`, ...).
    static let scriptWords: [[UInt8]] = [Array("javascript".utf8), Array("ecmascript".utf8)]

    /// ASCII case-insensitive equality with a lowercase `word`.
    static func equalIgnoringCase(_ bytes: Slice<UnsafeBufferPointer<UInt8>>, _ word: [UInt8]) -> Bool {
        bytes.count == word.count && zip(bytes, word).allSatisfy { ((0x41...0x5A).contains($0) ? $0 | 0x20 : $0) == $1 }
    }

    /// RFC 9110's tchar.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
            || "!#$%&'*+-.^_`|~".utf8.contains(byte)
    }
}

/// The media type a blob is stored with when the upload names none: guessed from the key's
/// extension, as nginx (mime.types), aws-cli and rclone do.
public enum MediaTypes {
    /// What is stored when nothing better is known.
    public static let fallback = "application/octet-stream"

    /// The type to store for an upload that sent `sent` (already validated) for the blob named
    /// `name` (a key, or a file name): `sent`, unless it is absent or curl's and wget's form
    /// default (`application/x-www-form-urlencoded`, which `--data-binary` and `--post-file`
    /// send for any file); then the type of the name's extension, or `fallback`.
    public static func stored(sent: String?, name: String?) -> String {
        if let sent, !isFormDefault(sent) { return sent }
        return name.flatMap(guess) ?? fallback
    }

    /// Whether a Content-Type is the form default (parameters and case aside).
    static func isFormDefault(_ contentType: String) -> Bool {
        let mediaType = contentType.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)[0]
        return mediaType.trimmingOWS().lowercased() == "application/x-www-form-urlencoded"
    }

    /// The type of the extension of the name's last segment (`photos/a.JPG` → `image/jpeg`), nil
    /// when the table has none.
    public static func guess(_ name: String) -> String? {
        let segment = name.split(separator: "/", omittingEmptySubsequences: false).last ?? ""
        guard let dot = segment.lastIndex(of: "."), segment.index(after: dot) < segment.endIndex else { return nil }
        return byExtension[segment[segment.index(after: dot)...].lowercased()]
    }

    /// The common types of nginx's mime.types (1.22), with the few that file sharing adds.
    static let byExtension: [String: String] = [
        // Text
        "html": "text/html", "htm": "text/html", "shtml": "text/html", "css": "text/css", "xml": "text/xml",
        "txt": "text/plain", "text": "text/plain", "log": "text/plain", "md": "text/markdown", "csv": "text/csv",
        "tsv": "text/tab-separated-values", "ics": "text/calendar", "vtt": "text/vtt", "mml": "text/mathml",
        "jad": "text/vnd.sun.j2me.app-descriptor", "wml": "text/vnd.wap.wml", "htc": "text/x-component",
        // Images
        "gif": "image/gif", "jpeg": "image/jpeg", "jpg": "image/jpeg", "png": "image/png", "webp": "image/webp",
        "avif": "image/avif", "svg": "image/svg+xml", "svgz": "image/svg+xml", "tif": "image/tiff", "tiff": "image/tiff",
        "ico": "image/x-icon", "bmp": "image/x-ms-bmp", "heic": "image/heic", "heif": "image/heif", "jng": "image/x-jng",
        "wbmp": "image/vnd.wap.wbmp",
        // Fonts
        "woff": "font/woff", "woff2": "font/woff2", "ttf": "font/ttf", "otf": "font/otf",
        // Applications and documents
        "js": "application/javascript", "mjs": "application/javascript", "json": "application/json",
        "jsonld": "application/ld+json", "map": "application/json", "wasm": "application/wasm",
        "atom": "application/atom+xml", "rss": "application/rss+xml", "pdf": "application/pdf",
        "ps": "application/postscript", "eps": "application/postscript", "ai": "application/postscript",
        "rtf": "application/rtf", "doc": "application/msword", "xls": "application/vnd.ms-excel",
        "ppt": "application/vnd.ms-powerpoint",
        "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "odt": "application/vnd.oasis.opendocument.text", "ods": "application/vnd.oasis.opendocument.spreadsheet",
        "odp": "application/vnd.oasis.opendocument.presentation", "epub": "application/epub+zip",
        "xhtml": "application/xhtml+xml", "xspf": "application/xspf+xml", "kml": "application/vnd.google-earth.kml+xml",
        "kmz": "application/vnd.google-earth.kmz", "jar": "application/java-archive", "war": "application/java-archive",
        "ear": "application/java-archive", "apk": "application/vnd.android.package-archive",
        "yaml": "application/yaml", "yml": "application/yaml", "toml": "application/toml", "sql": "application/sql",
        // Archives and binaries
        "zip": "application/zip", "gz": "application/gzip", "tgz": "application/gzip", "bz2": "application/x-bzip2",
        "xz": "application/x-xz", "zst": "application/zstd", "7z": "application/x-7z-compressed",
        "rar": "application/x-rar-compressed", "tar": "application/x-tar", "deb": "application/vnd.debian.binary-package",
        "rpm": "application/x-redhat-package-manager", "iso": "application/octet-stream",
        "img": "application/octet-stream", "dmg": "application/octet-stream", "exe": "application/octet-stream",
        "dll": "application/octet-stream", "bin": "application/octet-stream", "msi": "application/octet-stream",
        "sh": "application/x-sh", "pl": "application/x-perl", "crt": "application/x-x509-ca-cert",
        "pem": "application/x-x509-ca-cert", "der": "application/x-x509-ca-cert", "swf": "application/x-shockwave-flash",
        // Audio
        "mid": "audio/midi", "midi": "audio/midi", "kar": "audio/midi", "mp3": "audio/mpeg", "ogg": "audio/ogg",
        "oga": "audio/ogg", "opus": "audio/ogg", "m4a": "audio/x-m4a", "aac": "audio/aac", "flac": "audio/flac",
        "wav": "audio/wav", "weba": "audio/webm", "ra": "audio/x-realaudio",
        // Video
        "3gpp": "video/3gpp", "3gp": "video/3gpp", "ts": "video/mp2t", "mp4": "video/mp4", "m4v": "video/x-m4v",
        "mpeg": "video/mpeg", "mpg": "video/mpeg", "mov": "video/quicktime", "webm": "video/webm", "flv": "video/x-flv",
        "mng": "video/x-mng", "asx": "video/x-ms-asf", "asf": "video/x-ms-asf", "wmv": "video/x-ms-wmv",
        "avi": "video/x-msvideo", "mkv": "video/x-matroska", "m3u8": "application/vnd.apple.mpegurl",
    ]
}

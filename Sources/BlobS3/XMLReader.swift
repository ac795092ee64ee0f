/// A linear XML reader for the request bodies S3 takes (DeleteObjects, CompleteMultipartUpload,
/// CreateBucketConfiguration). It reads bytes as they arrive and reports elements as events.
/// Every byte is looked at a bounded number of times, whatever the body: the end of a tag or of
/// a text is searched from where the last search stopped, never again from its start. A token
/// (a tag, or the text between two tags) is at most `maxToken` bytes, elements nest at most
/// `maxDepth` deep and number at most `maxElements`. DOCTYPE (and with it every entity
/// declaration) is refused. The first error ends the reading: MalformedXML.
struct XMLReader {
    enum Event {
        /// An element opens; the path ends with its name.
        case start
        /// Text inside the innermost open element (entities decoded); an element's text may
        /// come in more than one event.
        case text(String)
        /// The innermost element closes; the path still ends with its name.
        case end
    }

    /// What the caller does with an event, given the path of open elements (local names,
    /// outermost first).
    typealias Handler = (Event, [String]) throws(S3Error) -> Void

    static let maxToken = 16 * 1024
    static let maxDepth = 8
    static let malformed = S3Error(.malformedXML, "The XML you provided was not well-formed or did not validate against our published schema.")

    let maxElements: Int
    private(set) var path: [String] = []
    private var elements = 0
    private var rootClosed = false
    /// Bytes not yet read as a whole token: the current token starts at `start`, and was
    /// searched up to `scanned` for its end.
    private var pending: [UInt8] = []
    private var start = 0
    private var scanned = 0
    /// Inside a tag: the quote of the attribute value the search is in.
    private var quote: UInt8?

    init(maxElements: Int) {
        self.maxElements = maxElements
    }

    /// Reads the next bytes of the body.
    mutating func feed(_ bytes: UnsafeRawBufferPointer, _ handle: Handler) throws(S3Error) {
        pending.append(contentsOf: bytes)
        while start < pending.count {
            if pending[start] == UInt8(ascii: "<") {
                guard let end = try tagEnd() else { break }
                try tag(pending[start...end], handle)
                start = end + 1
            } else {
                guard let less = pending[max(scanned, start)...].firstIndex(of: UInt8(ascii: "<")) else {
                    scanned = pending.count
                    break
                }
                try text(pending[start..<less], handle)
                start = less
            }
            scanned = start
            quote = nil
        }
        guard pending.count - start <= Self.maxToken else { throw Self.malformed }
        pending.removeFirst(start)
        scanned -= start
        start = 0
    }

    /// The body is complete: it must have held one whole root element, and only whitespace after it.
    mutating func finish(_ handle: Handler) throws(S3Error) {
        if start < pending.count { try text(pending[start...], handle) }
        guard rootClosed else { throw Self.malformed }
    }

    /// The index of the `>` that ends the tag at `start`, once it has arrived.
    private mutating func tagEnd() throws(S3Error) -> Int? {
        let opening = pending[start...].prefix(9)
        if opening.starts(with: "<!--".utf8) { return terminator("-->", after: 4) }
        if opening.starts(with: "<![CDATA[".utf8) { return terminator("]]>", after: 9) }
        if opening.starts(with: "<?".utf8) { return terminator("?>", after: 2) }
        if opening.count >= 2 && opening.starts(with: "<!".utf8) {
            // DOCTYPE, or a prefix of one of the above still arriving.
            guard "<!--".utf8.starts(with: opening) || "<![CDATA[".utf8.starts(with: opening) else { throw Self.malformed }
            return nil
        }
        var index = max(scanned, start + 1)
        while index < pending.count {
            let byte = pending[index]
            if let open = quote {
                if byte == open { quote = nil }
            } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                quote = byte
            } else if byte == UInt8(ascii: ">") {
                return index
            } else if byte == UInt8(ascii: "<") {
                throw Self.malformed  // a tag cannot hold one: fail here, not at the end of the body
            }
            index += 1
        }
        scanned = index
        return nil
    }

    /// The index of the last byte of `end` (`-->`, `]]>`, `?>`) after the token's first
    /// `after` bytes, once it has arrived.
    private mutating func terminator(_ end: String, after: Int) -> Int? {
        let end = Array(end.utf8)
        var index = max(scanned, start + after + end.count - 1)
        while index < pending.count {
            if pending[index] == end[end.count - 1], pending[(index - end.count + 1)...index].elementsEqual(end) { return index }
            index += 1
        }
        scanned = max(scanned, index)
        return nil
    }

    private mutating func tag(_ bytes: ArraySlice<UInt8>, _ handle: Handler) throws(S3Error) {
        let body = bytes.dropFirst().dropLast()
        switch body.first {
        case UInt8(ascii: "?"):
            return  // the XML declaration, or a processing instruction
        case UInt8(ascii: "!"):
            guard body.starts(with: "![CDATA[".utf8) else { return }  // a comment
            guard !path.isEmpty else { throw Self.malformed }
            try handle(.text(try Self.string(body.dropFirst(8).dropLast(2))), path)
        case UInt8(ascii: "/"):
            let name = try Self.name(body.dropFirst())
            guard name.end == body.endIndex || body[name.end...].allSatisfy(Self.isSpace), path.last == name.local else {
                throw Self.malformed
            }
            try handle(.end, path)
            path.removeLast()
            rootClosed = path.isEmpty
        default:
            guard !rootClosed else { throw Self.malformed }
            let name = try Self.name(body)
            let selfClosing = body.last == UInt8(ascii: "/")
            guard name.end == body.endIndex || Self.isSpace(body[name.end]) || (selfClosing && name.end == body.endIndex - 1) else {
                throw Self.malformed
            }
            elements += 1
            path.append(name.local)
            guard elements <= maxElements, path.count <= Self.maxDepth else { throw Self.malformed }
            try handle(.start, path)
            if selfClosing {
                try handle(.end, path)
                path.removeLast()
                rootClosed = path.isEmpty
            }
        }
    }

    /// Text between tags: only whitespace outside the root element.
    private func text(_ bytes: ArraySlice<UInt8>, _ handle: Handler) throws(S3Error) {
        guard !path.isEmpty else {
            guard bytes.allSatisfy(Self.isSpace) else { throw Self.malformed }
            return
        }
        try handle(.text(try Self.unescape(bytes)), path)
    }

    /// The name a tag starts with, without its namespace prefix, and where it ends.
    private static func name(_ bytes: ArraySlice<UInt8>) throws(S3Error) -> (local: String, end: Int) {
        let end = bytes.firstIndex { isSpace($0) || $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: ">") } ?? bytes.endIndex
        let whole = bytes[..<end]
        let local = whole.lastIndex(of: UInt8(ascii: ":")).map { whole[($0 + 1)...] } ?? whole
        guard !local.isEmpty else { throw malformed }
        return (try string(local), end)
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private static func string(_ bytes: ArraySlice<UInt8>) throws(S3Error) -> String {
        guard let text = String(validating: bytes, as: UTF8.self) else { throw malformed }
        return text
    }

    /// Text with its five entities and numeric character references decoded; any other `&` is
    /// malformed.
    static func unescape(_ bytes: ArraySlice<UInt8>) throws(S3Error) -> String {
        guard bytes.contains(UInt8(ascii: "&")) else { return try string(bytes) }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            guard bytes[index] == UInt8(ascii: "&") else {
                out.append(bytes[index])
                index += 1
                continue
            }
            guard let semicolon = bytes[index...].prefix(12).firstIndex(of: UInt8(ascii: ";")) else { throw malformed }
            let scalar = try reference(try string(bytes[(index + 1)..<semicolon]))
            out.append(contentsOf: String(Character(scalar)).utf8)
            index = semicolon + 1
        }
        return try string(out[...])
    }

    /// What `&name;` stands for.
    private static func reference(_ name: String) throws(S3Error) -> Unicode.Scalar {
        switch name {
        case "amp": return "&"
        case "lt": return "<"
        case "gt": return ">"
        case "quot": return "\""
        case "apos": return "'"
        default:
            let value: UInt32?
            if name.hasPrefix("#x") {
                value = UInt32(name.dropFirst(2), radix: 16)
            } else if name.hasPrefix("#") {
                value = UInt32(name.dropFirst())
            } else {
                value = nil
            }
            // Digits only (UInt32 would take a sign), and a character XML may hold.
            guard let value, name.dropFirst(name.hasPrefix("#x") ? 2 : 1).allSatisfy(\.isHexDigit),
                  let scalar = Unicode.Scalar(value), value >= 0x20 || [0x09, 0x0A, 0x0D].contains(value) else { throw malformed }
            return scalar
        }
    }
}

/// An element of a small XML body read whole: its name, text and children.
struct XMLNode {
    var name: String
    var text = ""
    var children: [XMLNode] = []

    /// The text of the first child named `name`, without surrounding whitespace.
    func value(_ name: String) -> String? {
        children.first { $0.name == name }.map { $0.text.trimmingCharacters() }
    }
}

extension XML {
    /// Reads a whole body into its root element. At most `maxChildren` elements directly under
    /// the root (MalformedXML at the first past it), and at most `maxPerChild` elements per child in all.
    static func parse(_ body: [UInt8], maxChildren: Int, maxPerChild: Int = 8) throws -> XMLNode {
        var reader = XMLReader(maxElements: maxChildren * maxPerChild + 8)
        var open: [XMLNode] = []
        var root: XMLNode?
        let handle: XMLReader.Handler = { event, path throws(S3Error) in
            switch event {
            case .start:
                if path.count == 2 && open[0].children.count >= maxChildren { throw XMLReader.malformed }
                open.append(XMLNode(name: path[path.count - 1]))
            case .text(let text):
                open[open.count - 1].text += text
            case .end:
                let node = open.removeLast()
                if open.isEmpty { root = node } else { open[open.count - 1].children.append(node) }
            }
        }
        try body.withUnsafeBytes { try reader.feed($0, handle) }
        try reader.finish(handle)
        guard let root else { throw XMLReader.malformed }
        return root
    }
}

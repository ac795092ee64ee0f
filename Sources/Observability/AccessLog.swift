import BlobCore
import MicroHTTPD

/// The access log: one line per request, formatted straight into bytes (no metadata dictionary,
/// no sorting, no string interpolation) and written through `LogOutput` in batches. Formatting
/// through swift-log cost 10–20 µs of CPU per request, a quarter of a 64 KiB range GET.
///
/// The lines read as the other log lines do. Text:
/// `TS info blobd: request blob.key=K client.address=A http.bytes_received=0 …` (fields sorted;
/// a value with a space, `"`, `=`, `\` or a control character is quoted and escaped, so a
/// client cannot forge a line or a field, CWE-117);
/// JSON: `{"blob.key":…,"client.address":…,…,"label":"blobd","level":"info","msg":"request","ts":…}`
/// with counts, the status and the duration as JSON numbers.
///
/// `principal` names who made the request, as its handler noted it on the head
/// (`HTTPRequestAnnotation`): `anonymous`, `token:DIGEST` (the first 16 bytes of the token's
/// SHA-256), `s3:ACCESS_KEY_ID`, `key:ID`, with `principal.name` the key's own name for a key of
/// the catalog, or `share:ID` for a share link's request (`/s/ID...`, whose path names it too). It is `-` (JSON `null`) when the request ended before anyone was identified: a
/// framing error, no route, or a credential that did not check out (401, a bad signature); a
/// request refused for its grants names who was refused. Never a token, secret or signature.
public final class AccessLog: Sendable {
    /// The line format.
    public enum Format: Sendable {
        case text
        case json
    }

    private let format: Format
    private let label: String
    private let output: LogOutput
    private let proxies: TrustedProxies

    /// Writes lines in `format`, labelled `label`, to `output`; the client address is the one
    /// `proxies` forwarded when the peer is one of them.
    public init(format: Format, label: String = "blobd", output: LogOutput = .standardError,
                proxies: TrustedProxies = TrustedProxies()) {
        self.format = format
        self.label = label
        self.output = output
        self.proxies = proxies
    }

    /// One request's line. `key` is the decoded blob key, when the route has one.
    public func record(_ summary: HTTPRequestSummary, route: String, key: String?) {
        var line: [UInt8] = []
        line.reserveCapacity(320)
        var first = true
        func field(_ name: StaticString, _ write: (inout [UInt8]) -> Void) {
            let nameBytes = UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
            switch format {
            case .text:
                line.append(UInt8(ascii: " "))
                line += nameBytes
                line.append(UInt8(ascii: "="))
                write(&line)
            case .json:
                if !first { line.append(UInt8(ascii: ",")) }
                line.append(UInt8(ascii: "\""))
                line += nameBytes
                line += "\":".utf8
                write(&line)
            }
            first = false
        }
        func text(_ value: String) -> (inout [UInt8]) -> Void {
            { [format] out in
                if format == .json {
                    out.append(UInt8(ascii: "\""))
                    Self.escape(value, into: &out)
                    out.append(UInt8(ascii: "\""))
                } else {
                    LogText.appendValue(value, to: &out)
                }
            }
        }
        func number(_ value: UInt64) -> (inout [UInt8]) -> Void {
            { out in Self.appendDecimal(value, to: &out) }
        }
        let none: (inout [UInt8]) -> Void = { [format] in $0 += (format == .json ? "null" : "-").utf8 }

        begin(&line)
        if let key { field("blob.key", text(key)) }
        field("client.address", text(proxies.clientAddress(of: summary.head)))
        if !summary.completed { field("http.aborted") { $0 += "true".utf8 } }
        field("http.bytes_received", number(summary.bytesReceived))
        field("http.bytes_sent", number(summary.completed ? summary.bytesSent : 0))
        field("http.duration_ms") { Self.appendMilliseconds(summary.duration, to: &$0) }
        field("http.method", text(summary.head.method))
        field("http.route", text(route))
        if let status = summary.status {
            field("http.status", number(UInt64(max(0, status))))
        } else {
            field("http.status", none)
        }
        if let principal = summary.head.annotation.principal {
            field("principal", text(principal.name))
            if let label = principal.label { field("principal.name", text(label)) }
        } else {
            field("principal", none)
        }
        end(&line)
        output.write(line, urgent: false)
    }

    /// What comes before a line's fields: the timestamp, level and message in text.
    private func begin(_ line: inout [UInt8]) {
        switch format {
        case .text:
            LogTimestamp.append(to: &line)
            line += " info ".utf8
            line += label.utf8
            line += ": request".utf8
        case .json:
            line.append(UInt8(ascii: "{"))
        }
    }

    /// What comes after a line's fields: the label, level, message and timestamp in JSON.
    private func end(_ line: inout [UInt8]) {
        if format == .json {
            line += ",\"label\":\"".utf8
            Self.escape(label, into: &line)
            line += "\",\"level\":\"info\",\"msg\":\"request\",\"ts\":\"".utf8
            LogTimestamp.append(to: &line)
            line += "\"}".utf8
        }
        line.append(UInt8(ascii: "\n"))
    }

    /// Appends `seconds` in milliseconds with three decimals.
    static func appendMilliseconds(_ seconds: Double, to out: inout [UInt8]) {
        let micros = UInt64((max(0, seconds) * 1_000_000).rounded())
        appendDecimal(micros / 1000, to: &out)
        out.append(UInt8(ascii: "."))
        let fraction = micros % 1000
        out += [UInt8(48 + fraction / 100), UInt8(48 + fraction / 10 % 10), UInt8(48 + fraction % 10)]
    }

    /// Appends `value` in decimal.
    static func appendDecimal(_ value: UInt64, to out: inout [UInt8]) {
        var digits: [UInt8] = []
        var rest = value
        repeat {
            digits.append(UInt8(48 + rest % 10))
            rest /= 10
        } while rest > 0
        out += digits.reversed()
    }

    /// `text` inside a JSON string (without the quotes).
    static func escape(_ text: String, into out: inout [UInt8]) {
        var quoted = JSON.string(text).utf8()
        quoted.removeFirst()
        quoted.removeLast()
        out += quoted
    }
}

/// A small JSON value that serialises with keys in the order given.
public indirect enum JSON: Sendable {
    case string(String)
    case number(Int64)
    case bool(Bool)
    case null
    case array([JSON])
    case object([(String, JSON)])

    /// The compact JSON text.
    public func serialized() -> String {
        String(decoding: utf8(), as: UTF8.self)
    }

    /// The compact JSON text as UTF-8 bytes (a response body).
    public func utf8() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(to: &out)
        return out
    }

    private func write(to out: inout [UInt8]) {
        switch self {
        case .string(let text): JSON.quote(text, into: &out)
        case .number(let value): out += String(value).utf8
        case .null: out += "null".utf8
        case .bool(let value): out += (value ? "true" : "false").utf8
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                item.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (i, (name, value)) in members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSON.quote(name, into: &out)
                out.append(UInt8(ascii: ":"))
                value.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// A JSON string: UTF-8 passes through, `"`, `\` and control characters are escaped.
    private static let hexDigits = Array("0123456789abcdef".utf8)

    private static func quote(_ text: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out += "\\\"".utf8
            case UInt8(ascii: "\\"): out += "\\\\".utf8
            case UInt8(ascii: "\n"): out += "\\n".utf8
            case UInt8(ascii: "\r"): out += "\\r".utf8
            case UInt8(ascii: "\t"): out += "\\t".utf8
            case 0..<0x20, 0x7F:
                out += "\\u00".utf8
                out.append(hexDigits[Int(byte >> 4)])
                out.append(hexDigits[Int(byte & 0x0F)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

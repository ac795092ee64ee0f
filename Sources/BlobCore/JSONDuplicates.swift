import Foundation

/// Finds an object member named twice in JSON text (`{"Effect":"Deny","Effect":"Allow"}`),
/// which JSONSerialization accepts, keeping the last: a document that says two things must be
/// refused, not read as whichever one a parser happens to keep. Names are compared decoded
/// (`"Eff\u0065ct"` is `"Effect"`). One pass over the bytes, a set of names per open object.
public enum JSONDuplicates {
    /// The first member name that repeats in one object, nil when none does (or the text is not
    /// JSON: the parser then says why).
    public static func firstDuplicate(in text: [UInt8]) -> String? {
        // One entry per open container: the names seen so far, nil for an array.
        var open: [Set<String>?] = []
        var expectsName = false
        var index = text.startIndex
        while index < text.endIndex {
            let byte = text[index]
            switch byte {
            case UInt8(ascii: "\""):
                guard let end = stringEnd(text, from: index) else { return nil }
                if expectsName, var names = open.last ?? nil {
                    guard let name = decode(text[index..<end]) else { return nil }
                    if !names.insert(name).inserted { return name }
                    open[open.count - 1] = names
                    expectsName = false
                }
                index = end
                continue
            case UInt8(ascii: "{"): open.append([]); expectsName = true
            case UInt8(ascii: "["): open.append(nil); expectsName = false
            case UInt8(ascii: "}"), UInt8(ascii: "]"): _ = open.popLast(); expectsName = false
            case UInt8(ascii: ","): expectsName = (open.last ?? nil) != nil
            default: break
            }
            index += 1
        }
        return nil
    }

    /// The index just past the string that starts at `start` (a quote), nil if it never ends.
    private static func stringEnd(_ text: [UInt8], from start: Int) -> Int? {
        var index = start + 1
        while index < text.endIndex {
            switch text[index] {
            case UInt8(ascii: "\\"): index += 2
            case UInt8(ascii: "\""): return index + 1
            default: index += 1
            }
        }
        return nil
    }

    /// A string token's value, escapes decoded.
    private static func decode(_ token: ArraySlice<UInt8>) -> String? {
        guard token.contains(UInt8(ascii: "\\")) else { return String(decoding: token.dropFirst().dropLast(), as: UTF8.self) }
        return try? JSONDecoder().decode(String.self, from: Data(token))
    }
}

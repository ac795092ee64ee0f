import BlobCore
import Foundation
import Testing
@testable import BlobAPIv1
@testable import HTTPCore

@Suite struct JSONTests {
    @Test func escapesWhatJSONRequires() {
        let text = JSON.object([("k\"ey", .string("a\\b\n\r\t\u{1}\u{7F}é🙂")), ("n", .number(-5)), ("z", .null),
                                ("l", .array([.number(1), .string("")]))]).serialized()
        #expect(text == #"{"k\"ey":"a\\b\n\r\t\u0001\u007fé🙂","n":-5,"z":null,"l":[1,""]}"#)
    }

    /// Random strings survive a round trip through Foundation's JSON parser.
    @Test func randomStringsRoundTrip() throws {
        var random = SeededGenerator(state: 5)
        let alphabet: [Character] = ["a", "\"", "\\", "\n", "\u{0}", "\u{1F}", "\u{7F}", "é", "🙂", " ", "/"]
        for _ in 0..<2000 {
            let text = String((0..<Int.random(in: 0...12, using: &random)).map { _ in alphabet.randomElement(using: &random) ?? "a" })
            let data = Data(JSON.array([.string(text)]).utf8())
            let parsed = try JSONSerialization.jsonObject(with: data) as? [String]
            #expect(parsed == [text])
        }
    }
}

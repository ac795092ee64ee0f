import Foundation

/// One request as a test sends it: the target is sent as is (raw path and query).
public struct TestRequest: Sendable {
    public var method: String
    public var target: String
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(_ method: String, _ target: String, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
    }
}

/// One response as a test reads it: header fields in the order sent, repeated ones kept.
public struct TestResponse: Sendable {
    public let status: Int
    public let headers: [(name: String, value: String)]
    public let body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first value of a header (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// Every value of a header (case-insensitive), in order.
    public func values(_ name: String) -> [String] {
        headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }

    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The body parsed as a JSON object.
    public var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
    }

    /// The text of the first `<Code>` element of an S3 XML error, or "" for none.
    public var s3Code: String {
        guard let start = text.range(of: "<Code>"), let end = text.range(of: "</Code>", range: start.upperBound..<text.endIndex)
        else { return "" }
        return String(text[start.upperBound..<end.lowerBound])
    }
}

import ArgumentParser
import HTTPCore
import Foundation
import OutboundHTTP

/// Why a `blobd key` command failed, and its exit status: 1 when blobd refused the request,
/// 2 for a usage error or no usable answer.
enum KeyCommandError: Error, CustomStringConvertible {
    case usage(String)
    case noAnswer(String)
    case refused(status: Int, message: String)

    var exitCode: Int32 {
        switch self {
        case .refused: 1
        case .usage, .noAnswer: 2
        }
    }

    var description: String {
        switch self {
        case .usage(let message), .noAnswer(let message), .refused(_, let message): message
        }
    }
}

/// The options every `blobd key` command takes.
struct AdminOptions: ParsableArguments {
    /// The environment variables `blobd key` reads (check-config knows them).
    static let variables = ["BLOBD_URL", "BLOBD_TOKEN"]
    static let defaultURL = "http://127.0.0.1:8080"

    @Option(help: "blobd's /v1 address, plain http:// (BLOBD_URL; default \(AdminOptions.defaultURL)).") var url: String?
    @Flag(help: "Print blobd's JSON answer as it came, for scripts.") var json = false
    @Option(help: "Seconds to connect, and again for the answer (default 30).") var timeout: Double = 30

    func validate() throws {
        guard timeout.isFinite, timeout > 0, timeout <= 3600 else { throw ValidationError("--timeout must be from 0 to 3600 seconds") }
    }
}

/// `/v1/admin/keys` over `HTTPClient`, with the token from `BLOBD_TOKEN`.
struct AdminKeysClient {
    let client: HTTPClient
    let token: String

    init(_ options: AdminOptions, environment: [String: String] = ProcessInfo.processInfo.environment) throws(KeyCommandError) {
        let text = options.url ?? environment["BLOBD_URL"].flatMap { $0.isEmpty ? nil : $0 } ?? AdminOptions.defaultURL
        do {
            client = HTTPClient(url: try ServerURL(parsing: text), timeout: options.timeout)
        } catch {
            throw .usage(error.description)
        }
        guard let token = environment["BLOBD_TOKEN"], !token.isEmpty else {
            throw .usage("set BLOBD_TOKEN to a token with admin:* (it is read from the environment only: a flag would show in ps)")
        }
        guard token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw .usage("BLOBD_TOKEN holds a space, a control character or a non-ASCII byte; no token of blobd does")
        }
        self.token = token
    }

    /// Sends a request to `/v1/admin/keys` + `suffix` and returns the answer of a 2xx status.
    func call(_ method: String, _ suffix: String = "", body: [String: Any]? = nil) throws(KeyCommandError) -> HTTPClientResponse {
        var headers = [("Authorization", "Bearer " + token), ("Accept", "application/json"), ("User-Agent", "blobd/\(blobdVersion)")]
        var bytes: [UInt8]?
        if let body {
            headers.append(("Content-Type", "application/json"))
            bytes = (try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])).map(Array.init) ?? []
        }
        let answer: HTTPClientResponse
        do {
            answer = try client.send(method, "/v1/admin/keys" + suffix, headers: headers, body: bytes)
        } catch {
            throw error.isUsage ? .usage(error.description) : .noAnswer("\(client.url): \(error)")
        }
        switch answer.status {
        case 200...299: return answer
        case 400...599: throw .refused(status: answer.status, message: Self.refusal(answer))
        default:
            let location = answer.header("location").map { " (Location: \(Self.printable($0)))" } ?? ""
            throw .noAnswer("\(client.url) answered \(answer.status)\(location), not blobd's admin API; is --url blobd's /v1 address?")
        }
    }

    /// The status and problem+json `detail` of a refusal, or the start of a body of another kind.
    static func refusal(_ answer: HTTPClientResponse) -> String {
        let problem = (try? JSONSerialization.jsonObject(with: Data(answer.body))) as? [String: Any]
        let title = problem?["title"] as? String ?? reason(answer.status)
        var message = "\(answer.status) \(printable(title))"
        if let detail = problem?["detail"] as? String {
            message += ": " + printable(detail)
        } else if !answer.body.isEmpty {
            message += ": " + printable(String(decoding: answer.body.prefix(200), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        }
        switch answer.status {
        case 401: message += " (BLOBD_TOKEN is not a token this blobd knows)"
        case 403: message += " (BLOBD_TOKEN needs the grant admin:*)"
        default: break
        }
        return message
    }

    private static func reason(_ status: Int) -> String {
        switch status {
        case 400: "Bad request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not found"
        case 409: "Conflict"
        default: status >= 500 ? "Server error" : "Refused"
        }
    }

    /// A key id as one path segment: percent-encoded past the characters ids are made of.
    static func segment(_ id: String) -> String {
        id.utf8.map { byte in
            let plain = (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == 0x2D || byte == 0x5F || byte == 0x3A || byte == 0x2E
            return plain ? String(UnicodeScalar(byte)) : "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
        }.joined()
    }

    /// Server text made safe for a terminal: control characters become `?`.
    static func printable(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) ? "?" : $0 }))
    }
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

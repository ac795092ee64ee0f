import Foundation
import MicroHTTPD
import HTTPCore

/// tusd's hook request and response JSON (github.com/tus/tusd/v2/pkg/hooks: HookRequest,
/// HookResponse), as blobd writes and reads them.
enum HookMessage {
    /// Why a hook's answer cannot be followed.
    struct Invalid: Error {
        let reason: String
        /// It asks for something blobd does not do (a custom upload id or storage): 501.
        var isUnsupported = false
    }

    /// The hook request: `{"Type", "Event": {"Upload", "HTTPRequest"}}`. Unless
    /// `forwardingCredentials`, the client's credentials stay out of it (`withoutCredentials`).
    static func request(_ event: HookEvent, upload: HookUpload, head: HTTPRequestHead, forwardingCredentials: Bool) -> [UInt8] {
        var (path, query, fields) = (head.path, head.query, head.headers)
        if !forwardingCredentials { (path, query, fields) = withoutCredentials(head) }
        var uri = String(decoding: path, as: UTF8.self)
        if let query { uri += "?" + String(decoding: query, as: UTF8.self) }
        var header: [String: [String]] = [:]
        for (name, value) in fields { header[canonical(name), default: []].append(value) }
        let message: [String: Any] = [
            "Type": event.rawValue,
            "Event": [
                "Upload": [
                    "ID": upload.id,
                    "Size": upload.size.map { NSNumber(value: $0) } ?? NSNull(),
                    "SizeIsDeferred": upload.size == nil,
                    "Offset": NSNumber(value: upload.offset),
                    "MetaData": upload.metadata,
                    "IsPartial": false,
                    "IsFinal": false,
                    "PartialUploads": NSNull(),
                    "Storage": upload.storage.map { $0 as Any } ?? NSNull(),
                ] as [String: Any],
                "HTTPRequest": [
                    "Method": head.method,
                    "URI": uri,
                    "RemoteAddr": head.remoteAddress,
                    "Header": header,
                ] as [String: Any],
            ] as [String: Any],
        ]
        return (try? JSONSerialization.data(withJSONObject: message, options: [.sortedKeys])).map(Array.init) ?? []
    }

    /// Header fields that carry a credential.
    static let credentialFields: Set<String> = ["authorization", "proxy-authorization", "cookie", "x-amz-security-token"]
    /// Query parameters that carry a credential (SigV4 and SigV2 presigned URLs).
    static let credentialParameters: Set<String> = ["x-amz-signature", "x-amz-credential", "x-amz-security-token", "signature",
                                                    "awsaccesskeyid"]

    /// The request's path, query and header fields without its credentials: no Authorization,
    /// Proxy-Authorization, Cookie or session token; no presigned signature or credential in the
    /// query; a share link's id (the credential of `/s/ID/...`) as `-`.
    static func withoutCredentials(_ head: HTTPRequestHead) -> (path: [UInt8], query: [UInt8]?, headers: [(name: String, value: String)]) {
        let headers = head.headers.filter { !credentialFields.contains($0.name.lowercased()) }
        let query = head.query.map { raw in
            raw.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: false).filter { pair in
                let name = pair.prefix { $0 != UInt8(ascii: "=") }
                return !credentialParameters.contains(String(decoding: name, as: UTF8.self).lowercased())
            }.joined(separator: [UInt8(ascii: "&")]).map { $0 }
        }
        var path = head.path
        let share = Array("/s/".utf8)
        if path.starts(with: share) {
            let rest = path.dropFirst(share.count)
            path = share + Array("-".utf8) + Array(rest[(rest.firstIndex(of: UInt8(ascii: "/")) ?? rest.endIndex)...])
        }
        return (path, query, headers)
    }

    /// Go's canonical header key: `content-type` → `Content-Type`.
    static func canonical(_ name: String) -> String {
        name.lowercased().split(separator: "-", omittingEmptySubsequences: false)
            .map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined(separator: "-")
    }

    /// What the hook's answer says: an empty body or `{}` lets the upload go on unchanged.
    static func outcome(of body: [UInt8], event: HookEvent) throws(Invalid) -> HookOutcome {
        guard !body.allSatisfy({ [0x20, 0x09, 0x0A, 0x0D].contains($0) }) else { return .proceed(HookChanges()) }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] else {
            throw Invalid(reason: "the answer is not a JSON object")
        }
        let response = try httpResponse(object["HTTPResponse"])
        if let reject = object["RejectUpload"], !(reject is NSNull) {
            guard let flag = reject as? Bool else { throw Invalid(reason: "RejectUpload is not a boolean") }
            if flag { return .reject(rejection(response)) }
        }
        var changes = HookChanges(headers: response.headers)
        if let change = object["ChangeFileInfo"], !(change is NSNull) {
            guard let change = change as? [String: Any] else { throw Invalid(reason: "ChangeFileInfo is not an object") }
            for unsupported in ["ID", "Storage"] where nonEmpty(change[unsupported]) {
                throw Invalid(reason: "The hook's ChangeFileInfo.\(unsupported) is not supported by blobd.", isUnsupported: true)
            }
            if event == .preCreate, let metadata = change["MetaData"], !(metadata is NSNull) {
                changes.metadata = try Self.metadata(metadata)
            }
        }
        return .proceed(changes)
    }

    private static func nonEmpty(_ value: Any?) -> Bool {
        switch value {
        case nil, is NSNull: false
        case let text as String: !text.isEmpty
        case let object as [String: Any]: !object.isEmpty
        default: true
        }
    }

    private struct Response {
        var status: Int?
        var body: String?
        var headers: [(name: String, value: String)] = []
    }

    private static func httpResponse(_ value: Any?) throws(Invalid) -> Response {
        guard let value, !(value is NSNull) else { return Response() }
        guard let object = value as? [String: Any] else { throw Invalid(reason: "HTTPResponse is not an object") }
        var response = Response()
        if let status = object["StatusCode"], !(status is NSNull) {
            guard let number = status as? Int else { throw Invalid(reason: "HTTPResponse.StatusCode is not a number") }
            response.status = number == 0 ? nil : number
        }
        response.body = object["Body"] as? String
        if let header = object["Header"] as? [String: Any] {
            for (name, value) in header.sorted(by: { $0.key < $1.key }) {
                guard HTTPFraming.isToken(name.lowercased()), let text = value as? String,
                      !text.utf8.contains(where: { $0 < 0x20 && $0 != 0x09 || $0 == 0x7F }) else {
                    throw Invalid(reason: "HTTPResponse.Header '\(name)' is not a valid header field")
                }
                // Framing stays blobd's.
                guard !["content-length", "transfer-encoding", "connection"].contains(name.lowercased()) else { continue }
                response.headers.append((name: name, value: text))
            }
        }
        return response
    }

    /// The answer to a rejected upload: the hook's status (400 unless it gives a 4xx or 5xx),
    /// body and header fields.
    private static func rejection(_ response: Response) -> HTTPResponse {
        let status = response.status.flatMap { (400...599).contains($0) ? $0 : nil } ?? 400
        let body = Array((response.body ?? "upload rejected by server\n").utf8)
        var headers = response.headers
        if !headers.contains(where: { $0.name.caseInsensitiveEquals("Content-Type") }) {
            headers.append((name: "Content-Type", value: "text/plain; charset=utf-8"))
        }
        return HTTPResponse(status: status, headers: headers, body: .bytes(body))
    }

    private static func metadata(_ value: Any) throws(Invalid) -> [String: String] {
        guard let object = value as? [String: Any] else { throw Invalid(reason: "ChangeFileInfo.MetaData is not an object") }
        var metadata: [String: String] = [:]
        for (name, value) in object {
            guard !name.isEmpty, !name.contains(" "), !name.contains(","), let text = value as? String else {
                throw Invalid(reason: "ChangeFileInfo.MetaData '\(name)' is not a name with a string value")
            }
            metadata[name] = text
        }
        return metadata
    }
}

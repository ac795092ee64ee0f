import BlobdHandlers
import HTTPCore
import BlobStore
import CatalogSQLite
import Foundation
import LiveBlobd
import Logging
import MicroHTTPD
import Access

/// Where a test's blobd runs: its handlers called in this process, or the built binary.
public enum Mode: String, Sendable, CaseIterable, CustomStringConvertible {
    /// The handlers, wired as `blobd` wires them, driven without a socket.
    case inProcess
    /// The built `.build/debug/blobd`, on 127.0.0.1 port 0, over raw HTTP/1.1.
    case live

    public var description: String { rawValue }

    /// The modes a test runs in: both, or those `HTTP_TEST_MODES` names (`inProcess`, `live`,
    /// comma-separated), e.g. to run the in-process half alone.
    public static let selected: [Mode] = {
        guard let names = ProcessInfo.processInfo.environment["HTTP_TEST_MODES"] else { return allCases }
        return names.split(separator: ",").compactMap { Mode(rawValue: String($0)) }
    }()
}

/// What a test server is started with (the subset of blobd's settings the tests change).
public struct ServerSettings: Sendable {
    /// The tokens file's contents (`--tokens-file`); nil for open access.
    public var tokens: String?
    /// `--max-blob-size`.
    public var maxBlobSize: UInt64?
    /// Whether the S3 dialect listens too (`--s3-listen`).
    public var s3: Bool
    /// Whether /ui/ serves the web page (false: `--no-ui`).
    public var webUI: Bool
    /// In process only: upload reads of the catalog that this makes fail.
    public var failingUploadReads: FailingUploadReads?

    public init(tokens: String? = nil, maxBlobSize: UInt64? = nil, s3: Bool = false, webUI: Bool = true) {
        self.webUI = webUI
        self.tokens = tokens
        self.maxBlobSize = maxBlobSize
        self.s3 = s3
    }
}

/// A blobd for one test, in process or live, on a fresh temporary data directory; its
/// clients `v1` and `s3` send requests the same way in either mode.
public final class TestServer: Sendable {
    public let mode: Mode
    /// The /v1 and tus listener.
    public let v1: TestClient
    /// The S3 listener; only with `ServerSettings.s3`.
    public let s3: TestClient
    private let directory: TempDir
    /// The live binary; nil in process (the handlers hold the store).
    private let process: BlobdProcess?
    /// In process: the access policy, whose directory reads the catalog's keys and bucket
    /// settings (versioning, Object Lock) as blobd's does; stopped with the server.
    private let access: AccessPolicy?

    public init(_ mode: Mode, _ settings: ServerSettings = ServerSettings()) throws {
        self.mode = mode
        let directory = TempDir("blobd-http")
        self.directory = directory
        let tokensFile = settings.tokens.map { tokens in
            let path = directory.file("tokens", Array(tokens.utf8))
            chmod(path, 0o600)
            return path
        }
        switch mode {
        case .live:
            var arguments = tokensFile.map { ["--tokens-file", $0] } ?? []
            if let size = settings.maxBlobSize { arguments += ["--max-blob-size", String(size)] }
            if settings.s3 { arguments += ["--s3-listen", "127.0.0.1:0"] }
            if !settings.webUI { arguments.append("--no-ui") }
            let process = try BlobdProcess(arguments, dataDir: directory.path + "/data")
            self.process = process
            access = nil
            v1 = TestClient(.live(LiveTransport(port: process.port)), host: "127.0.0.1:\(process.port)")
            let s3Port = settings.s3 ? process.s3Port ?? 0 : 0
            s3 = TestClient(.live(LiveTransport(port: s3Port)), host: "127.0.0.1:\(s3Port)")
        case .inProcess:
            let logger = Logger(label: "blobd") { _ in SwiftLogNoOpLogHandler() }
            let store = try BlobStore(directory: directory.path + "/data", catalog: settings.failingUploadReads?.opener ?? .sqlite,
                                      options: BlobStoreOptions(maxBlobSize: settings.maxBlobSize, minFreeBytes: 0), logger: logger)
            let access = try AccessPolicy(tokensFile: tokensFile, publicRead: false)
            // Each change reloads the directory on this node; one node needs no polling.
            try access.directory.attach(store.catalog.access, settings: store.settings)
            self.access = access
            let handlers = BlobdHandlers(store: store, access: access, settings: .init(version: "test", webUI: settings.webUI),
                                         logger: logger)
            process = nil
            v1 = TestClient(.inProcess(InProcessTransport(handler: handlers.v1)), host: "127.0.0.1:8080")
            s3 = TestClient(.inProcess(InProcessTransport(handler: settings.s3 ? handlers.makeS3() : handlers.v1)),
                            host: "127.0.0.1:9000")
        }
    }


    /// The data directory.
    public var dataDirectory: String { directory.path + "/data" }
}

/// Sends requests to one listener of a `TestServer`.
public struct TestClient: Sendable {
    enum Transport: Sendable {
        case inProcess(InProcessTransport)
        case live(LiveTransport)
    }

    let transport: Transport
    /// The `Host` sent with every request (what a SigV4 signature covers).
    public let host: String

    init(_ transport: Transport, host: String) {
        self.transport = transport
        self.host = host
    }

    /// Sends `request` as it is, adding `Host` and a `Content-Length` (for a body, and for any
    /// PUT, POST or PATCH) when missing, as curl does.
    public func send(_ request: TestRequest) throws -> TestResponse {
        var request = request
        let names = Set(request.headers.map { $0.name.lowercased() })
        if !names.contains("host") { request.headers.insert((name: "Host", value: host), at: 0) }
        let sendsBody = !request.body.isEmpty || ["PUT", "POST", "PATCH"].contains(request.method)
        if sendsBody, !names.contains("content-length"), !names.contains("transfer-encoding") {
            request.headers.append((name: "Content-Length", value: String(request.body.count)))
        }
        switch transport {
        case .inProcess(let transport): return try transport.send(request)
        case .live(let transport): return try transport.send(request)
        }
    }

    /// Sends a request whose header fields are written `Name: value`.
    @discardableResult
    public func send(_ method: String, _ target: String, _ fields: [String] = [], body: [UInt8] = []) throws -> TestResponse {
        let headers = fields.map { field -> (name: String, value: String) in
            guard let colon = field.firstIndex(of: ":") else { return (field, "") }
            return (String(field[..<colon]), field[field.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        return try send(TestRequest(method, target, headers: headers, body: body))
    }

    /// GET `target`.
    public func get(_ target: String, _ fields: [String] = []) throws -> TestResponse {
        try send("GET", target, fields)
    }

    /// PUT `body` at `target`.
    @discardableResult
    public func put(_ target: String, _ body: [UInt8], _ fields: [String] = []) throws -> TestResponse {
        try send("PUT", target, fields, body: body)
    }
}

extension TestClient {
    /// A client of a listener on 127.0.0.1 at `port` over raw HTTP/1.1: a node a test started
    /// in this process, on a real socket.
    public static func live(port: UInt16) -> TestClient {
        TestClient(.live(LiveTransport(port: Int(port))), host: "127.0.0.1:\(port)")
    }
}

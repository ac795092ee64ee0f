import BlobStore
import Foundation
import Logging
import MicroHTTPD
import HTTPCore
import OutboundHTTP

/// A blocking hook's moment, named as tusd names it.
public enum HookEvent: String, Sendable, CaseIterable {
    /// Before an upload is created: before any byte of its body is read.
    case preCreate = "pre-create"
    /// After every byte has arrived and been verified, before the commit.
    case preFinish = "pre-finish"
}

/// `--hook-url`, `--hook-events`, `--hook-timeout`.
public struct HookSettings: Sendable {
    public var url: ServerURL
    public var events: Set<HookEvent>
    /// Seconds for the whole exchange with the hook.
    public var timeout: Double
    /// Whether the hook is told the client's credentials (Authorization, cookies, presigned
    /// signatures, share link ids); by default they are left out (`--hook-forward-credentials`).
    public var forwardsCredentials: Bool

    public init(url: ServerURL, events: Set<HookEvent>, timeout: Double = 5, forwardsCredentials: Bool = false) {
        self.url = url
        self.events = events
        self.timeout = timeout
        self.forwardsCredentials = forwardsCredentials
    }
}

/// What a hook is told about the upload: tusd's `Event.Upload`.
public struct HookUpload: Sendable {
    /// The tus upload id; "" before one exists (pre-create) and for uploads that are not tus.
    public var id = ""
    /// The announced size; nil when it is deferred or unknown (a chunked body).
    public var size: UInt64?
    public var offset: UInt64 = 0
    /// tus metadata, or for other uploads `key`, `filename`, `filetype` and the user metadata.
    public var metadata: [String: String]
    /// `Storage`: where the blob goes (`Type`, `Bucket`, `Key`) once that is known.
    public var storage: [String: String]?

    public init(id: String = "", size: UInt64?, offset: UInt64 = 0, metadata: [String: String], storage: [String: String]? = nil) {
        self.id = id
        self.size = size
        self.offset = offset
        self.metadata = metadata
        self.storage = storage
    }
}

/// What a hook that lets the upload go on asks for.
public struct HookChanges: Sendable {
    /// `ChangeFileInfo.MetaData`: the upload's metadata from now on (pre-create only).
    public var metadata: [String: String]?
    /// `HTTPResponse.Header`: header fields added to the answer.
    public var headers: [(name: String, value: String)] = []

    public init(metadata: [String: String]? = nil, headers: [(name: String, value: String)] = []) {
        self.metadata = metadata
        self.headers = headers
    }
}

/// What a hook decided.
public enum HookOutcome: Sendable {
    /// Go on, with these changes.
    case proceed(HookChanges)
    /// `RejectUpload`: this answer goes out and nothing is stored.
    case reject(HTTPResponse)
    /// The hook cannot be reached, timed out, or answered what blobd cannot follow.
    case fail(HTTPError)
}

/// tusd's blocking HTTP hooks: a POST of tusd's hook request JSON to `--hook-url` for each
/// enabled event, whose answer (`RejectUpload`, `HTTPResponse`, `ChangeFileInfo.MetaData`) is
/// honoured, so a handler written for tusd works unchanged. The exchange runs on the hooks' own
/// threads: a connection waiting for pre-create is suspended right after its head (no body byte
/// read), one waiting for pre-finish holds its verified bytes uncommitted.
public final class BlockingHooks: Sendable {
    public let settings: HookSettings
    private let pool: BlockingPool
    private let logger: Logger

    public init(_ settings: HookSettings, threads: Int = 16, logger: Logger) {
        self.settings = settings
        self.logger = logger
        pool = BlockingPool(name: "hooks", threads: threads)
    }

    /// True when `event` is enabled.
    public func runs(_ event: HookEvent) -> Bool { settings.events.contains(event) }

    /// A `.decide` action: asks the pre-create hook off the worker thread, then answers its
    /// rejection or failure without reading the body, or goes on with `proceed`.
    public func preCreate(_ head: HTTPRequestHead, upload: HookUpload,
                          failure: @escaping @Sendable (any Error) -> HTTPResponse,
                          proceed: @escaping @Sendable (HookChanges) throws -> HTTPRequestAction) -> HTTPRequestAction {
        .decide { [self] decider in
            pool.submit { [self] in
                switch call(.preCreate, upload: upload, head: head) {
                case .proceed(let changes):
                    do {
                        decider.decide(try proceed(changes))
                    } catch {
                        decider.decide(.respond(failure(error)))
                    }
                case .reject(let response): decider.decide(.respond(response))
                case .fail(let error): decider.decide(.respond(failure(error)))
                }
            }
        }
    }

    /// Asks the pre-finish hook off the calling thread; `then` runs on a hook thread (the caller
    /// hands over what it captures and touches it no more).
    public func preFinish(_ head: HTTPRequestHead, upload: HookUpload, then: @escaping (HookOutcome) -> Void) {
        let handover = Handover(value: then)
        pool.submit { [self] in handover.value(call(.preFinish, upload: upload, head: head)) }
    }

    /// One exchange with the hook, on the calling thread.
    public func call(_ event: HookEvent, upload: HookUpload, head: HTTPRequestHead) -> HookOutcome {
        let client = HTTPClient(url: settings.url, timeout: settings.timeout, limit: 1 << 20)
        let answer: HTTPClientResponse
        do {
            answer = try client.send("POST", "", headers: [("Content-Type", "application/json")],
                                     body: HookMessage.request(event, upload: upload, head: head,
                                                               forwardingCredentials: settings.forwardsCredentials))
        } catch {
            logger.warning("The blocking hook did not answer", metadata: ["hook": "\(event.rawValue)", "error": "\(error)"])
            if case .timeout = error { return .fail(.unavailable("The \(event.rawValue) hook did not answer within \(settings.timeout) s.")) }
            return .fail(.unavailable("The \(event.rawValue) hook cannot be reached."))
        }
        guard (200..<300).contains(answer.status) else {
            logger.warning("The blocking hook failed", metadata: ["hook": "\(event.rawValue)", "status": "\(answer.status)"])
            return .fail(.unavailable("The \(event.rawValue) hook failed (it answered \(answer.status))."))
        }
        do throws(HookMessage.Invalid) {
            return try HookMessage.outcome(of: answer.body, event: event)
        } catch {
            logger.warning("The blocking hook's answer is not one blobd can follow",
                           metadata: ["hook": "\(event.rawValue)", "error": "\(error.reason)"])
            return .fail(error.isUnsupported ? .notImplemented(error.reason) : .unavailable("The \(event.rawValue) hook's answer is malformed."))
        }
    }

    /// Waits for running exchanges to end (at shutdown).
    public func shutdown(waitingAtMost seconds: Double) {
        _ = pool.shutdown(waitingAtMost: seconds)
    }
}

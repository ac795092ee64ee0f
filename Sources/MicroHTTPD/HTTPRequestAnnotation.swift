import Synchronization

/// What a handler learns about a request while it handles it and wants reported when the
/// request completes: today, who made it. One per request, made with its head and carried by
/// it, so `HTTPHandler.requestCompleted(_:)` reads, through `summary.head.annotation`, what
/// `handle(_:)` decided, without deciding it again (an S3 signature is expensive to check).
///
/// Set it once the caller is known, from any thread (a `.later` action may set it too); a
/// head made from another one (a method override) passes the annotation on. Until it is set,
/// `principal` is nil: the request was refused, or answered, before anyone was identified.
public final class HTTPRequestAnnotation: Sendable {
    /// Who made a request, as the access log names it.
    public struct Principal: Sendable, Equatable {
        /// The principal's name (`anonymous`, `key:ID`, …); never a secret.
        public let name: String
        /// A human-given name the principal has (a catalog key's), nil for none.
        public let label: String?

        public init(name: String, label: String? = nil) {
            self.name = name
            self.label = label
        }
    }

    private let slot = Mutex<Principal?>(nil)
    private let bucketSlot = Mutex<String?>(nil)

    public init() {}

    /// Who made the request, once the handler knows; nil before.
    public var principal: Principal? {
        get { slot.withLock { $0 } }
        set { slot.withLock { $0 = newValue } }
    }

    /// The bucket the request acts on when its path does not name it (a share link's), once
    /// the handler knows; its CORS rules answer the request.
    public var bucket: String? {
        get { bucketSlot.withLock { $0 } }
        set { bucketSlot.withLock { $0 = newValue } }
    }
}

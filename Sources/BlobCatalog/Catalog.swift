import BlobCore

/// An opened catalog: its faces, all one database, and what this node keeps beside it.
public struct Catalog: Sendable {
    public let blobs: any BlobIndex
    public let uploads: any UploadIndex
    public let buckets: any BucketIndex
    public let multipart: any MultipartIndex
    public let access: any AccessIndex
    public let events: any EventOutbox
    public let node: NodeBookkeeping
    /// Noncurrent versions and delete markers (versioned buckets); every backend sets it.
    public var versions: (any VersionIndex)?

    public init(blobs: any BlobIndex, uploads: any UploadIndex, buckets: any BucketIndex, multipart: any MultipartIndex,
                access: any AccessIndex, events: any EventOutbox, node: NodeBookkeeping) {
        self.events = events
        self.blobs = blobs
        self.uploads = uploads
        self.buckets = buckets
        self.multipart = multipart
        self.access = access
        self.node = node
    }
}

/// What a catalog is opened with, from the store that opens it.
public struct CatalogContext: Sendable {
    /// The data directory (where a catalog on the local disk keeps its file).
    public let directory: String
    /// Where rows whose key fails validation are reported.
    public let invalidKeys: InvalidKeyRows
    /// Where the catalog's decisions read the time of day.
    public let clock: WallClock

    /// The context of a catalog opened for the data directory `directory`.
    public init(directory: String, invalidKeys: InvalidKeyRows, clock: WallClock = .system) {
        self.directory = directory
        self.invalidKeys = invalidKeys
        self.clock = clock
    }
}

/// A backend, chosen by the executable from its configuration, that the store opens once it
/// holds its data directory. Each backend module offers its own (`.sqlite`, `.postgres(...)`).
public struct CatalogOpener: Sendable {
    /// True when several nodes share the catalog and the data directory: the store keeps its
    /// pending logs and lock in `nodes/NODE/` then, and needs to know before it opens.
    public let isShared: Bool
    private let opening: @Sendable (CatalogContext) throws(StoreError) -> Catalog

    public init(isShared: Bool, open: @escaping @Sendable (CatalogContext) throws(StoreError) -> Catalog) {
        self.isShared = isShared
        self.opening = open
    }

    /// Opens (creating or migrating if needed) the catalog.
    public func open(_ context: CatalogContext) throws(StoreError) -> Catalog {
        try opening(context)
    }
}

/// The smallest byte string greater than every string starting with `prefix`, or nil if none:
/// the upper end of a prefix's range in bytewise order.
package func prefixUpperBound(of prefix: [UInt8]) -> [UInt8]? {
    var bound = prefix
    while let last = bound.last {
        if last < 0xFF {
            bound[bound.count - 1] = last + 1
            return bound
        }
        bound.removeLast()
    }
    return nil
}

// swift-tools-version:6.1
import PackageDescription

// blobd runs on Linux only: it relies on sync_file_range, /proc, epoll and sendfile as Linux
// has them. SwiftPM has no way to name Linux as the only platform, so none is declared, and
// Sources/BlobCore/LinuxOnly.swift stops a build anywhere else with a clear message.
let package = Package(
    name: "blobd",
    products: [
        .executable(name: "blobd", targets: ["blobd"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    ],
    targets: [
        // libmicrohttpd from Debian's libmicrohttpd-dev, with wrappers for its variadic calls.
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        // OpenSSL's libcrypto from Debian's libssl-dev: SHA-256 whose state can be saved.
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // zlib from Debian's zlib1g-dev: CRC-32 for S3 checksums.
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // libpq from Debian's libpq-dev: the shared index of several nodes.
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        // Linux file calls Swift's Glibc module does not expose (sync_file_range).
        .systemLibrary(name: "CFileSystem"),
        // setsockopt() without TCP_CORK, which libmicrohttpd sets on every large file response.
        // Linked into the blobd executable only: its definition there interposes libc's for the
        // whole process; a library or test bundle that linked it would change theirs too.
        .target(name: "CNoCork", publicHeadersPath: "."),
        // MD5 and SHA-256 of the same bytes in one pass, interleaved so that SHA-256 (on the
        // CPU's SHA extensions) hides in MD5's dependency chain; on OpenSSL's own contexts.
        .target(name: "CDigests", dependencies: ["CCrypto"]),
        // The one checked path for system calls (EINTR retried, EBADF fatal) and a typed file descriptor.
        .target(name: "SystemCalls"),
        // The Swift face of libmicrohttpd: daemon, request head, responses. No blob logic.
        .target(name: "MicroHTTPD", dependencies: ["CMicroHTTPD", "SystemCalls"]),
        // The Swift face of libpq: connections, prepared statements, a bounded pool.
        .target(name: "PostgresClient", dependencies: ["CLibPQ"]),
        // Keys, records, attributes, uploads, buckets, errors and write conditions. No I/O.
        .target(name: "BlobCore"),
        // What a node runs while it serves, started in order and stopped in reverse.
        .target(name: "Services"),
        // Bucket settings as values: versioning and Object Lock as stored, CORS, lifecycle,
        // notifications, canned ACLs and policies, and the table every request reads them from.
        .target(name: "BucketSettings", dependencies: ["BlobCore"]),
        // The catalog protocols (what the nodes share, and each node's own bookkeeping), group
        // commit, read batching and the record cache, written once for every backend.
        .target(name: "BlobCatalog", dependencies: [
            "BlobCore", "BucketSettings",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The files: layout helpers, pending-write log, data-directory lock, space reserve,
        // hashing writers, open blobs.
        .target(name: "BlobContent", dependencies: ["BlobCore", "CCrypto", "CDigests", "CFileSystem", "SystemCalls"]),
        // The catalog of one node: one SQLite file through GRDB (BlobContent: the file is made 0600).
        .target(name: "CatalogSQLite", dependencies: [
            "BlobCore", "BlobCatalog", "BlobContent", "BucketSettings", "SystemCalls",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The catalog a cluster shares: PostgreSQL through libpq.
        .target(name: "CatalogPostgres", dependencies: [
            "BlobCore", "BlobCatalog", "BucketSettings", "PostgresClient",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // Wires a catalog and the files: put/get/delete/list, tus, multipart, recovery, fsck,
        // and the buckets' settings service. No HTTP, no concrete catalog backend.
        .target(name: "BlobStore", dependencies: [
            "BlobCore", "BlobCatalog", "BlobContent", "BucketSettings", "SystemCalls",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // Metrics, the access log and the peers it believes, log output, request ids, refusal reasons.
        .target(name: "Observability", dependencies: ["MicroHTTPD", "BlobStore", "Services", "SystemCalls"]),
        // HTTP semantics every dialect shares: ranges, preconditions, dates, percent-encoding,
        // digest fields, framing checks, representation headers, body plans, body consumers, CORS.
        .target(name: "HTTPCore", dependencies: [
            "Observability", "MicroHTTPD", "BlobStore", "SystemCalls",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // Who a caller is and what it may do: tokens, keys, principals, one authorization decision.
        .target(name: "Access", dependencies: [
            "HTTPCore", "MicroHTTPD", "BlobStore", "SystemCalls",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // An HTTP/1.1 client on blocking sockets, for hooks and webhooks (no TLS: a local relay).
        .target(name: "OutboundHTTP", dependencies: ["SystemCalls"]),
        // tusd's blocking hooks: what a hook is told and what its answer may change.
        .target(name: "TusHooks", dependencies: [
            "HTTPCore", "OutboundHTTP", "MicroHTTPD", "BlobStore",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // Events: which changes the buckets' subscriptions want, drafted before they commit, and
        // their delivery to webhooks (a service: started and stopped with the node).
        .target(name: "Webhooks", dependencies: [
            "Access", "Observability", "OutboundHTTP", "Services", "MicroHTTPD", "BlobStore",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The /v1 dialect and tus 1.0: a route table, problem+json.
        .target(name: "BlobAPIv1", dependencies: [
            "HTTPCore", "Access", "Observability", "TusHooks", "Webhooks", "MicroHTTPD", "BlobStore",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The S3 dialect: path-style routes, SigV4, XML, over the same store.
        .target(name: "BlobS3", dependencies: [
            "HTTPCore", "Access", "Observability", "TusHooks", "Webhooks", "BlobStore", "MicroHTTPD", "CZlib",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The handlers of both listeners wired over one store: by blobd, and by the in-process tests.
        .target(name: "BlobdHandlers", dependencies: [
            "HTTPCore", "Access", "Observability", "TusHooks", "Webhooks", "BlobAPIv1", "BlobS3", "BlobStore", "MicroHTTPD",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .executableTarget(name: "blobd", dependencies: [
            "BlobdHandlers", "HTTPCore", "Access", "Observability", "OutboundHTTP", "TusHooks", "Webhooks", "BlobStore", "CatalogSQLite", "CatalogPostgres", "MicroHTTPD", "PostgresClient", "CNoCork", "SystemCalls",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // GRDB: to write index rows that blobd itself would refuse.
        .testTarget(name: "BlobStoreTests", dependencies: [
            "BlobStore", "CatalogSQLite", "CatalogPostgres", .product(name: "GRDB", package: "GRDB.swift"),
        ]),
        // The write-condition evaluator and the other domain types.
        .testTarget(name: "BlobCoreTests", dependencies: ["BlobCore"]),
        // The HTTP core and the /v1 dialect, without a socket.
        .testTarget(name: "BlobHTTPTests", dependencies: ["HTTPCore", "Access", "Observability", "OutboundHTTP", "TusHooks", "Webhooks", "BucketSettings", "BlobAPIv1", "BlobStore", "MicroHTTPD"]),
        .testTarget(name: "BlobS3Tests", dependencies: ["BlobS3", "HTTPCore", "Access", "Observability", "BucketSettings", "BlobAPIv1", "BlobStore", "CatalogSQLite", "MicroHTTPD"]),
        .testTarget(name: "SystemCallsTests", dependencies: ["SystemCalls"]),
        // Test support: launches the built blobd (a child process, a temp data dir, raw sockets);
        // links no module of blobd.
        .target(name: "LiveBlobd", path: "Tests/LiveBlobd"),
        // Test support: one client API for blobd's handlers driven in process (no socket) and
        // for the live binary. For test targets only.
        .target(name: "HTTPTesting", dependencies: [
            "BlobdHandlers", "HTTPCore", "Access", "Observability", "TusHooks", "Webhooks", "BlobStore", "CatalogSQLite", "MicroHTTPD", "LiveBlobd", "CCrypto",
            .product(name: "Logging", package: "swift-log"),
        ], path: "Tests/HTTPTesting"),
        // The HTTP semantics of both dialects, each test run in process and against the live binary.
        .testTarget(name: "HTTPSemanticsTests", dependencies: ["HTTPTesting", "LiveBlobd"]),
        // A node of the BlobdNode library started in process on port 0: its services, event
        // delivery and blocking hooks, answered by receivers in the test.
        .testTarget(name: "BlobdNodeTests", dependencies: [
            "BlobdHandlers", "HTTPTesting", "LiveBlobd", "Access", "BlobCore", "BlobStore", "TusHooks", "Webhooks",
            "OutboundHTTP", "MicroHTTPD", "CCrypto", .product(name: "Logging", package: "swift-log"),
        ]),
        // Launches the built blobd and talks to it with real clients; links no module of it.
        .testTarget(name: "EndToEndTests", dependencies: ["LiveBlobd"]),
        // One conformance suite over every catalog backend (SQLite, and a PostgreSQL 15 it starts).
        .testTarget(name: "CatalogTests", dependencies: [
            "BlobStore", "CatalogSQLite", "CatalogPostgres", "PostgresClient", .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Logging", package: "swift-log"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)

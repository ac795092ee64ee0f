import Foundation
import Testing
@testable import BlobStore
import CatalogPostgres

@Suite struct OpenFailureTests {
    /// Descriptors this process has open.
    static func openDescriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0
    }

    /// A store whose index cannot open fails to open, and leaves none of its 256 open `blobs/`
    /// folders (nor its lock) behind: twenty failed opens leak less than one store's worth,
    /// however many descriptors other tests open and close meanwhile.
    @Test func storeWhoseIndexCannotOpenLeaksNoDescriptors() throws {
        let dir = TempDirectory()
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: dir.path + "/index.sqlite"))
        #expect(throws: StoreError.self) { try BlobStore(directory: dir.path) }
        let before = Self.openDescriptors()
        for _ in 0..<20 {
            #expect(throws: StoreError.self) { try BlobStore(directory: dir.path) }
        }
        #expect(Self.openDescriptors() - before < BlobRecord.folders.count)
        // The lock went with the failed store: a store opens once the index is sound again.
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: dir.path + "/index.sqlite" + suffix) }
        _ = try BlobStore(directory: dir.path)
    }

    /// The same for a catalog that cannot be reached: a PostgreSQL nobody listens for. The
    /// folders, the node's lock and the catalog's connections all go with the failed open.
    @Test func storeWhoseCatalogIsUnreachableLeaksNoDescriptors() throws {
        let dir = TempDirectory()
        let unreachable = CatalogOpener.postgres(url: "postgresql://blobd@127.0.0.1:1/none?connect_timeout=2", connections: 2)
        #expect(throws: StoreError.self) { try BlobStore(directory: dir.path, catalog: unreachable) }
        let before = Self.openDescriptors()
        for _ in 0..<20 {
            #expect(throws: StoreError.self) { try BlobStore(directory: dir.path, catalog: unreachable) }
        }
        #expect(Self.openDescriptors() - before < BlobRecord.folders.count)
    }
}

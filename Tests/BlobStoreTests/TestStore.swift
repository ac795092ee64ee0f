import BlobStore
import CatalogSQLite

extension BlobStore {
    /// A store over the SQLite catalog, as a single node opens it (the executable chooses the
    /// catalog from its configuration; tests of the store take the default).
    convenience init(directory: String, options: BlobStoreOptions = .init()) throws(StoreError) {
        try self.init(directory: directory, catalog: .sqlite, options: options)
    }
}

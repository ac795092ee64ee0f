import BlobCore

/// A catalog backend as the decisions written once in BlobCatalog see it: a way to run a
/// `CatalogTransaction`, and the clock its decisions read the time of day from. A backend that
/// conforms gets `VersionIndex` and `BlobIndex.remove` / `removeExpired` written over it
/// (`CatalogBackend+VersionIndex.swift`, `CatalogBackend+BlobIndex.swift`).
public protocol CatalogBackend: Sendable {
    /// The backend's transaction.
    associatedtype Transaction: CatalogTransaction

    /// Where the decisions read the time of day (`WallClock.system` unless the backend was
    /// opened with another).
    var clock: WallClock { get }

    /// Runs `body` in a write transaction, durable when this returns; a failure of `body`
    /// rolls it back. A backend may run `body` again (after a serialization failure), so it
    /// decides every condition again.
    func writing<T>(_ body: (Transaction) throws(Transaction.Failure) -> T) throws(StoreError) -> T
    /// Runs `body`, which only reads, on a consistent view where the backend has one.
    func reading<T>(_ body: (Transaction) throws(Transaction.Failure) -> T) throws(StoreError) -> T
}

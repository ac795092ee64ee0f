// The store's API speaks in the domain types (keys, records, errors, write conditions), the
// content types (write streams' hashers, open blobs) and the catalog faces it hands out
// (`buckets`) and the buckets' settings: a module that uses the store sees them with it.
@_exported import BlobCatalog
@_exported import BlobContent
@_exported import BlobCore
@_exported import BucketSettings

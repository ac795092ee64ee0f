/// Why a store operation failed. Named after the outcome; BlobHTTP maps each case to a status.
public enum StoreError: Error, Equatable, Sendable {
    /// The key breaks the key rules; the reason says which.
    case invalidKey(String)
    /// No blob at this key.
    case notFound
    /// The write's precondition (If-Match, If-None-Match, ...) did not hold.
    case preconditionFailed
    /// The key holds a blob, and the caller's grant allows creating only (`create`).
    case createOnly
    /// The blob is larger than the configured limit.
    case tooLarge(limit: UInt64)
    /// The body's SHA-256 differs from the digest the client announced.
    case digestMismatch(expected: [UInt8], actual: [UInt8])
    /// The key is 64 hex digits (content-addressed) but not the SHA-256 of the body, `actual`.
    case keyNotContentDigest(actual: [UInt8])
    /// The disk is full, or free space would fall below the configured minimum.
    case insufficientStorage
    /// No resumable upload with this id.
    case uploadNotFound
    /// The resumable upload expired and was removed.
    case uploadExpired
    /// The client's offset is not the upload's; `current` is.
    case offsetMismatch(current: UInt64)
    /// Another request is appending to this upload right now.
    case uploadBusy
    /// The upload's length is already set (or is smaller than what arrived).
    case lengthConflict
    /// A chunk's checksum (tus Upload-Checksum) did not match; the chunk was dropped.
    case checksumMismatch
    /// Another process holds the data directory.
    case dataDirectoryLocked(path: String)
    /// The data directory belongs to a cluster (it has `nodes/`), but no shared index was given.
    case dataDirectoryIsShared(path: String)
    /// A system call failed; `operation` names it, `errno` says why.
    case io(operation: String, errno: Int32)
    /// The index could not be read or written; the failure keeps its kind.
    case index(IndexFailure)
    /// No bucket of this name (S3).
    case bucketNotFound
    /// The bucket still holds objects (S3).
    case bucketNotEmpty
    /// A multipart Complete names a part that is not there, or with another ETag (S3).
    case invalidPart(number: Int)
    /// A multipart Complete lists its parts out of ascending order (S3).
    case invalidPartOrder
    /// A part other than the last is below 5 MiB (S3).
    case partTooSmall(number: Int)
    /// A resumable upload's saved state (offset and hash state) is invalid; it cannot go on.
    case uploadStateInvalid(id: String, reason: String)
    /// The credential (or client address) has `limit` unfinished uploads already.
    case tooManyUploads(limit: Int)
    /// No key with this id (keys made at run time).
    case keyNotFound
    /// A key with this id, token or access key id exists already; the detail says which.
    case keyConflict(String)
    /// No share link with this id.
    case shareNotFound
    /// The version is under Object Lock (a retention in force or a legal hold): it may not be
    /// removed, nor its retention shortened.
    case objectLocked
}

/// Why the index failed, by kind: each kind calls for a different answer (507, retry, alarm).
public enum IndexFailure: Error, Equatable, Sendable {
    /// The disk holding the index is full (SQLITE_FULL).
    case full
    /// The index is locked by another writer past the busy timeout (SQLITE_BUSY, SQLITE_LOCKED).
    case busy
    /// The index cannot be opened, read or written right now (SQLITE_CANTOPEN, SQLITE_IOERR,
    /// SQLITE_READONLY, SQLITE_PERM); the detail says what failed.
    case unavailable(String)
    /// The index file is damaged (SQLITE_CORRUPT, SQLITE_NOTADB).
    case corrupt(String)
    /// Any other failure; the detail says what.
    case failed(String)
}

extension StoreError: CustomStringConvertible {
    public var description: String {
        switch self {
        case .invalidKey(let reason): "invalid key: \(reason)"
        case .notFound: "no blob at this key"
        case .preconditionFailed: "precondition failed"
        case .createOnly: "the key exists, and the credential may only create"
        case .keyNotFound: "no such key"
        case .keyConflict(let detail): "key conflict: \(detail)"
        case .shareNotFound: "no such share link"
        case .objectLocked: "the version is locked (Object Lock)"
        case .tooLarge(let limit): "blob larger than the limit of \(limit) bytes"
        case .digestMismatch: "the body does not match its announced digest"
        case .keyNotContentDigest: "the key is 64 hex digits but not the body's SHA-256"
        case .insufficientStorage: "not enough free space in the data directory"
        case .uploadNotFound: "no upload with this id"
        case .uploadExpired: "the upload expired"
        case .offsetMismatch(let current): "the upload is at offset \(current)"
        case .uploadBusy: "another request is appending to this upload"
        case .lengthConflict: "the upload length conflicts with what is known"
        case .checksumMismatch: "the chunk does not match its checksum"
        case .dataDirectoryLocked(let path): "data directory \(path) is in use by another blobd"
        case .dataDirectoryIsShared(let path): "data directory \(path) is a cluster's (it has nodes/): give its PostgreSQL index with --index"
        case .io(let operation, let errno): "\(operation) failed: \(String(cString: strerror(errno)))"
        case .index(.full): "index error: the disk is full"
        case .index(.busy): "index error: the index is busy"
        case .index(.unavailable(let detail)): "index unavailable: \(detail)"
        case .index(.corrupt(let detail)): "index corrupt: \(detail)"
        case .index(.failed(let detail)): "index error: \(detail)"
        case .invalidPart(let number): "part \(number) is missing or has another ETag"
        case .invalidPartOrder: "the parts are not in ascending order"
        case .partTooSmall(let number): "part \(number) is smaller than 5 MiB"
        case .bucketNotFound: "no bucket of this name"
        case .bucketNotEmpty: "the bucket is not empty"
        case .uploadStateInvalid(let id, let reason): "the saved state of upload \(id) is invalid: \(reason)"
        case .tooManyUploads(let limit): "\(limit) unfinished uploads already, the most allowed"
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif

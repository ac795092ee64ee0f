import BlobCatalog
import BlobContent
import BlobCore
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// Resumable uploads (tus): a data file in `DIR/uploads/ID` that grows request by request, its
/// offset and SHA-256 state saved in the index after every request, the blob committed at the
/// last byte exactly as a PUT commits.
extension BlobStore {
    /// Starts an upload. `length` nil defers it; `lifetime` is how long it may sit idle. `owner`
    /// (a credential or client address) may have `maxOpenUploads` unfinished uploads at most.
    public func createUpload(length: UInt64?, metadata: String, key: BlobKey?, attributes: BlobAttributes,
                             lifetime: Int64, owner: String? = nil) throws(StoreError) -> UploadRecord {
        if let length, length > sizeLimit { throw .tooLarge(limit: sizeLimit) }
        try checkFreeSpace(needed: length ?? 0)
        let id = FileSystem.randomID()
        try FileSystem.open(uploadPath(id), O_WRONLY | O_CREAT | O_EXCL).close()
        try FileSystem.syncDirectory(directory + "/uploads")
        let record = UploadRecord(id: id, length: length, offset: 0, hashState: SHA256Hasher().state, metadata: metadata,
                                  key: key, attributes: attributes, expires: now() + lifetime)
        do {
            try uploadIndex.insert(record, owner: owner, limit: options.maxOpenUploads)
        } catch {
            FileSystem.remove(uploadPath(id))
            throw error
        }
        return record
    }

    /// The upload `id`; an expired one is removed and reported as `.uploadExpired`.
    public func upload(_ id: String) throws(StoreError) -> UploadRecord {
        guard id.utf8.count == 32, id.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }),
              let record = try uploadIndex.upload(id) else { throw .uploadNotFound }
        if record.expires <= now() {
            // Should this fail, the expiry sweep removes it later.
            do throws(StoreError) {
                try removeUpload(id)
            } catch {
                logger.warning("Cannot remove an expired upload", metadata: ["upload.id": "\(id)", "error": "\(error)"])
            }
            throw .uploadExpired
        }
        return record
    }

    /// Whom the upload `id` counts against: the credential, client address or share link
    /// (`share:ID`) that made it; nil for none.
    public func owner(ofUpload id: String) throws(StoreError) -> String? {
        try uploadIndex.owner(ofUpload: id)
    }

    /// The upload `id` as it stands: an append to it on this node is stopped first, keeping the
    /// bytes that arrived, so the offset is the durable one (tusd answers a HEAD so too).
    public func currentUpload(_ id: String) throws(StoreError) -> UploadRecord {
        preemptUpload(id)
        return try upload(id)
    }

    /// Starts appending at `offset`, which must be the upload's offset. `length` sets a deferred
    /// length. Only one append per upload runs at a time: one in progress on this node is
    /// stopped (see `Preemptible`), one on another node gives `.uploadBusy`. `bodySize`: the
    /// request's length, when known (a large body is hashed on a second thread). `checksum`:
    /// what this request's bytes must hash to (tus Upload-Checksum), verified at `finish`.
    /// `onlyCreate`: the caller may only create, so completing the upload never replaces a blob.
    public func beginAppend(to id: String, at offset: UInt64, length: UInt64? = nil, lifetime: Int64,
                            bodySize: UInt64? = nil, checksum: UploadAppend.Checksum? = nil,
                            onlyCreate: Bool = false, events: EventDraft? = nil) throws(StoreError) -> UploadAppend {
        guard try claimUpload(id, preempting: true) else { throw .uploadBusy }
        do throws(StoreError) {
            var record = try upload(id)
            guard !record.isComplete, offset == record.offset else { throw .offsetMismatch(current: record.offset) }
            if let length {
                if let known = record.length {
                    guard known == length else { throw .lengthConflict }
                } else {
                    guard length >= record.offset else { throw .lengthConflict }
                    if length > sizeLimit { throw .tooLarge(limit: sizeLimit) }
                    record.length = length
                }
            }
            let hasher: SHA256Hasher
            do {
                hasher = try SHA256Hasher(state: record.hashState, byteCount: record.offset)
            } catch {
                logger.error("Invalid saved state of a resumable upload", metadata: ["upload.id": "\(id)", "error": "\(error)"])
                throw .uploadStateInvalid(id: id, reason: error.description)
            }
            let descriptor = try FileSystem.open(uploadPath(id), O_WRONLY)
            // Bytes past the saved offset were never acknowledged (a crash mid-request): drop them.
            do throws(Errno) {
                try descriptor.truncate(to: offset)
                try descriptor.seek(to: offset)
            } catch {
                descriptor.close()
                throw FileSystem.error("truncate upload", error.code)
            }
            record.expires = now() + lifetime
            // The append owns the descriptor and releases the claim when it ends.
            let remaining = record.length.map { $0 - offset }
            let expected = [remaining, bodySize].compactMap { $0 }.min()
            var condition = WriteCondition.always
            condition.onlyCreate = onlyCreate
            let append = UploadAppend(store: self, record: record, descriptor: descriptor, hasher: hasher, expected: expected,
                                      checksum: checksum, condition: condition, events: events)
            holdUpload(id, by: append)
            return append
        } catch {
            releaseUpload(id)
            throw error
        }
    }

    /// Removes an upload (tus termination): its data file and its record.
    public func terminateUpload(_ id: String) throws(StoreError) {
        _ = try upload(id)
        guard try claimUpload(id, preempting: true) else { throw .uploadBusy }
        defer { releaseUpload(id) }
        try removeUpload(id)
    }

    /// Removes uploads idle past their expiry; returns how many.
    @discardableResult
    public func removeExpiredUploads() -> Int {
        let removed = sweepExpired("upload", { () throws(StoreError) in try uploadIndex.expiredUploads(now: now()) }) {
            id throws(StoreError) in
            // One busy (an append or termination in progress) goes at a later sweep.
            guard try claimUpload(id) else { return false }
            defer { releaseUpload(id) }
            try removeUpload(id)
            return true
        }
        if removed > 0 { logger.info("Removed expired uploads", metadata: ["count": "\(removed)"]) }
        return removed
    }

    /// One expiry sweep of a `kind` of upload: each id `expired` lists goes by `remove`, which
    /// answers false for one left to a later sweep. A failure to list ends the sweep, a failure
    /// to remove one is logged and the sweep goes on. Returns how many were removed.
    func sweepExpired(_ kind: String, _ expired: () throws(StoreError) -> [String],
                      remove: (String) throws(StoreError) -> Bool) -> Int {
        let ids: [String]
        do throws(StoreError) {
            ids = try expired()
        } catch {
            logger.error("Cannot list expired \(kind)s", metadata: ["error": "\(error)"])
            return 0
        }
        var removed = 0
        for id in ids {
            do throws(StoreError) {
                if try remove(id) { removed += 1 }
            } catch {
                logger.error("Cannot remove an expired \(kind)", metadata: ["upload.id": "\(id)", "error": "\(error)"])
            }
        }
        return removed
    }

    func uploadPath(_ id: String) -> String {
        "\(directory)/uploads/\(id)"
    }

    private func removeUpload(_ id: String) throws(StoreError) {
        try uploadIndex.removeUpload(id)
        FileSystem.remove(uploadPath(id))
    }
}

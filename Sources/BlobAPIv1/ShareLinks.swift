import BlobStore
import Foundation
import HTTPCore
import MicroHTTPD
import Access

/// `/s/ID...`: share links in use, without an Authorization header (the link is the credential).
/// Every request reads the link from the catalog, so a revoked, expired or used-up link is 404 on
/// every node at once; so is a link whose maker's credential is gone or no longer holds what the
/// link needs (`requirements(target:isPrefix:allow:)`, checked again on every use against the
/// keys the catalog holds at that moment).
///
/// - A read link of a key: `GET|HEAD /s/ID`. Of a prefix: `GET|HEAD /s/ID/NAME`, and the listing
///   at `GET /s/ID/` (the /v1 listing's parameters and JSON, names relative to the prefix), where
///   `/s/ID` redirects (308).
/// - An upload link (create only): `PUT /s/ID` (a key) or `PUT /s/ID/NAME` (a prefix), and tus:
///   creation at `POST /s/ID/uploads` (a prefix link's blob is named by the metadata's `key`,
///   else `filename`), then `HEAD|PATCH|DELETE /s/ID/uploads/UPLOAD`, the Location it answers.
///   An upload continues only through a link in force whose key or prefix covers it.
extension BlobService {
    /// A request under `/s/`: `raw` is what follows it.
    func shareRequest(_ head: HTTPRequestHead, _ raw: ArraySlice<UInt8>) throws -> HTTPRequestAction {
        let slash = raw.firstIndex(of: UInt8(ascii: "/"))
        let id = String(decoding: raw[..<(slash ?? raw.endIndex)], as: UTF8.self)
        let rest = slash.map { raw[raw.index(after: $0)...] }
        // The access log names the link the request used, as its path does already.
        if Self.isShareID(id) { head.annotation.principal = HTTPRequestAnnotation.Principal(name: "share:" + id, label: nil) }
        let share = try shareInForce(id)
        head.annotation.bucket = Self.firstSegment(share.target[...])
        switch share.allow {
        case .read: return try shareRead(head, share, rest)
        case .upload: return try shareUpload(head, share, rest)
        }
    }

    /// The link `id` if it is in force, else `.shareNotFound` (404).
    func shareInForce(_ id: String) throws -> ShareRecord {
        guard Self.isShareID(id), let share = try shareCatalog().share(id) else { throw StoreError.shareNotFound }
        if let expires = share.expires, expires <= store.now() { throw StoreError.shareNotFound }
        if share.allow == .read, let limit = share.maxDownloads, share.downloads >= limit { throw StoreError.shareNotFound }
        // The maker's grants as the catalog holds them now, not as of this node's last poll: a
        // key made or changed on another node counts at once.
        try access.directory.reloadIfChanged()
        guard let grants = makerGrants(share.creator),
              Self.requirements(target: share.target, isPrefix: share.isPrefix, allow: share.allow).allSatisfy(grants.permits) else {
            throw StoreError.shareNotFound
        }
        return share
    }

    /// What the link's maker may do now, as a request with its credential could: the
    /// credential's own grants, every caller's and every credential's; nil once the credential
    /// is gone or expired.
    private func makerGrants(_ creator: String) -> Grants? {
        let anonymous = access.anonymousGrants
        if creator == "anonymous" { return anonymous }
        return access.grants(ofPrincipal: creator)?.union(access.authenticatedGrants(adding: anonymous))
    }

    /// The key `rest` names: a key link's own (no `rest`), a prefix link's prefix and the
    /// percent-decoded name; nil when the path names none.
    private static func sharedKey(_ share: ShareRecord, _ rest: ArraySlice<UInt8>?) throws -> BlobKey? {
        guard share.isPrefix else { return rest == nil ? try BlobKey(validating: share.target) : nil }
        guard let rest, !rest.isEmpty else { return nil }
        let slash = UInt8(ascii: "/")
        if rest.first == slash || zip(rest, rest.dropFirst()).contains(where: { $0 == slash && $1 == slash }) {
            throw HTTPError.badRequest("The name's path has an empty segment; send a slash that belongs to the name as %2F.")
        }
        guard let name = PercentEncoding.decode(rest) else {
            throw HTTPError.badRequest("The name has an invalid percent-encoding (a % must be followed by two hex digits).")
        }
        return try BlobKey(validating: share.target + name)
    }

    // MARK: Read links

    private func shareRead(_ head: HTTPRequestHead, _ share: ShareRecord, _ rest: ArraySlice<UInt8>?) throws -> HTTPRequestAction {
        guard head.method == "GET" || head.method == "HEAD" else { throw HTTPError.methodNotAllowed(allowed: ["GET", "HEAD"]) }
        if share.isPrefix, rest?.isEmpty ?? true {
            guard rest != nil else {
                // `/s/ID` of a prefix: its listing is `/s/ID/`, under which the names are.
                return .respond(HTTPResponse(status: 308, headers: [("Location", publicURL + "/s/\(share.id)/"), Self.noStore]))
            }
            return .respond(try list(head, base: share.target))
        }
        guard let key = try Self.sharedKey(share, rest) else { throw HTTPError.noRoute }
        let catalog = try shareCatalog()
        let id = share.id
        // `?inline`: shown in the browser (a preview), still with the name to save it under.
        let inline = PercentEncoding.decodeQuery(head.query ?? [])?.contains { $0.name == "inline" } ?? false
        let disposition = Self.attachment(key)
        let download = ShareDownload(disposition: inline ? "inline" + disposition.dropFirst("attachment".count) : disposition) {
            guard try catalog.countDownload(id) else { throw StoreError.shareNotFound }
        }
        return read(head, key: key, share: download)
    }

    /// `attachment; filename="NAME"` with the key's last segment (RFC 6266); a name that is not
    /// plain printable ASCII travels in `filename*` (RFC 8187, UTF-8, percent-encoded), with a
    /// fallback whose other bytes are `_`.
    static func attachment(_ key: BlobKey) -> String {
        let segments = key.bytes.split(separator: UInt8(ascii: "/"))
        let name = Array(segments.last ?? [])
        guard !name.isEmpty else { return "attachment" }
        let plain: (UInt8) -> Bool = { (0x20...0x7E).contains($0) && $0 != 0x22 && $0 != 0x5C && $0 != 0x25 }
        let fallback = String(decoding: name.map { plain($0) ? $0 : UInt8(ascii: "_") }, as: UTF8.self)
        guard !name.allSatisfy(plain) else { return "attachment; filename=\"\(fallback)\"" }
        return "attachment; filename=\"\(fallback)\"; filename*=UTF-8''" + PercentEncoding.encodeComponent(name)
    }

    // MARK: Upload links

    private func shareUpload(_ request: HTTPRequestHead, _ share: ShareRecord, _ rest: ArraySlice<UInt8>?) throws -> HTTPRequestAction {
        let uploads = Array("uploads".utf8)
        if let rest, rest.elementsEqual(uploads) || rest.starts(with: uploads + [UInt8(ascii: "/")]) {
            let head = Self.applyingMethodOverride(request)
            do {
                return try shareTus(head, share, upload: rest.count > uploads.count ? rest.dropFirst(uploads.count + 1) : nil)
            } catch {
                var response = failure(error)
                response.headers.append(Self.tusResumable)
                return .respond(response)
            }
        }
        guard request.method == "PUT" else { throw HTTPError.methodNotAllowed(allowed: ["PUT"]) }
        guard let key = try Self.sharedKey(share, rest) else { throw HTTPError.noRoute }
        return try receiveUpload(request, key: key, onlyCreate: true, recheck: { [self] in _ = try shareInForce(share.id) })
    }

    /// tus through an upload link: creation at `uploads`, the rest at `uploads/UPLOAD`.
    private func shareTus(_ head: HTTPRequestHead, _ share: ShareRecord, upload raw: ArraySlice<UInt8>?) throws -> HTTPRequestAction {
        if head.method == "OPTIONS" { return .respond(tusOptions()) }
        guard let raw else {
            guard head.method == "POST" else { throw HTTPError.methodNotAllowed(allowed: ["POST", "OPTIONS"]) }
            let target = UploadTarget(key: { [self] metadata in try shareUploadKey(share, metadata) }, onlyCreate: { _ in true },
                                      owner: "share:" + share.id, recheck: { [self] _ in _ = try shareInForce(share.id) },
                                      location: { [publicURL] in publicURL + "/s/\(share.id)/uploads/" + $0 })
            return try createUpload(head, target)
        }
        let id = Self.uploadID(raw)
        let upload = try store.upload(id)
        // A link sees only the uploads made through it, not others' under its prefix.
        guard let key = upload.key, share.isPrefix ? key.bytes.starts(with: share.target) : key.bytes == share.target,
              try store.owner(ofUpload: id) == "share:" + share.id else {
            throw StoreError.uploadNotFound
        }
        switch head.method {
        case "HEAD": return try uploadOffset(head, id: id)
        case "PATCH": return try patchUpload(head, id: id, onlyCreate: true, recheck: { [self] in _ = try shareInForce(share.id) })
        case "DELETE": return try terminateUpload(head, id: id)
        default: throw HTTPError.methodNotAllowed(allowed: ["HEAD", "PATCH", "DELETE", "OPTIONS"])
        }
    }

    /// The key a tus creation through `share` stores at: a key link's, or a prefix link's prefix
    /// and the metadata's `key` (else `filename`). A key that holds a blob is refused at once.
    private func shareUploadKey(_ share: ShareRecord, _ metadata: [String: [UInt8]]) throws -> BlobKey {
        let key: BlobKey
        if share.isPrefix {
            guard let name = metadata["key"] ?? metadata["filename"], !name.isEmpty else {
                throw HTTPError.badRequest("An upload through a prefix's link names its blob in the metadata's key or filename.")
            }
            key = try BlobKey(validating: share.target + name)
        } else {
            key = try BlobKey(validating: share.target)
        }
        if try store.record(for: key) != nil { throw StoreError.createOnly }
        return key
    }
}

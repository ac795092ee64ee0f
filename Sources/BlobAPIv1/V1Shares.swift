import BlobStore
import Foundation
import HTTPCore
import MicroHTTPD
import Access

/// `/v1/shares`: share links, made by a caller who holds `share` and what the link allows
/// (`read`, or `create`/`write` for an upload link) on its key or on every key of its prefix.
/// A link borrows its maker's grants: it works while the maker's credential lives and still
/// holds them (`ShareLinks.swift` serves it at `/s/ID`).
extension BlobService {
    /// Largest `max_downloads`.
    static let maxShareDownloads: Int64 = 1_000_000_000

    /// What a share link asks for, checked.
    struct ShareRequest {
        let target: [UInt8]
        let isPrefix: Bool
        let allow: ShareRecord.Allow
        let expiresIn: Int64?
        let maxDownloads: Int64?
    }

    /// POST /v1/shares `{"key": K | "prefix": P, "allow": "read" | "upload", "expires_in"?, "max_downloads"?}`.
    func createShare(_ head: HTTPRequestHead) throws -> HTTPRequestAction {
        let caller = try BearerAuthenticator(access).authenticate(head)
        try Self.requireJSON(head)
        return .receive(BufferedBody(limit: Self.maxAdminBody, committers: committers) { [self] body in
            do {
                let request = try Self.parseShareRequest(try Self.jsonObject(body))
                for requirement in Self.requirements(target: request.target, isPrefix: request.isPrefix, allow: request.allow)
                where !caller.grants.permits(requirement) {
                    if caller.isAnonymous { throw HTTPError.unauthorized(.noCredential, "Making a share link needs a bearer token.") }
                    throw HTTPError.forbidden(requirement)
                }
                let now = store.now()
                let share = ShareRecord(id: KeyFactory.shareID(), creator: caller.name, target: request.target,
                                        isPrefix: request.isPrefix, allow: request.allow, created: now,
                                        expires: request.expiresIn.map { now + $0 }, maxDownloads: request.maxDownloads)
                try shareCatalog().insertShare(share)
                return Self.jsonResponse(status: 201, json(share, head), headers: [("Location", "/v1/shares/" + share.id)])
            } catch {
                return failure(error)
            }
        })
    }

    /// GET /v1/shares: the caller's share links.
    func listShares(_ head: HTTPRequestHead) throws -> HTTPResponse {
        let caller = try BearerAuthenticator(access).authenticate(head)
        if caller.isAnonymous, !caller.grants.list.contains(where: { $0.action == .share }) {
            throw HTTPError.unauthorized(.noCredential, "Listing share links needs a bearer token.")
        }
        let shares = try shareCatalog().shares(createdBy: caller.name)
        return Self.jsonResponse(status: 200, .object([("shares", .array(shares.map { json($0, head) }))]))
    }

    /// DELETE /v1/shares/ID: revokes a link at once on every node (each use reads the catalog).
    /// Only its maker or an `admin:*` caller may.
    func revokeShare(_ head: HTTPRequestHead, id: String) throws -> HTTPResponse {
        let caller = try BearerAuthenticator(access).authenticate(head)
        let catalog = try shareCatalog()
        guard Self.isShareID(id), let share = try catalog.share(id) else { throw StoreError.shareNotFound }
        if share.creator != caller.name, !caller.grants.allowsEverywhere(.admin) {
            if caller.isAnonymous { throw HTTPError.unauthorized(.noCredential, "Revoking a share link needs its maker's bearer token.") }
            throw HTTPError.forbidden(.everywhere(.admin))
        }
        try catalog.removeShare(id)
        return HTTPResponse(status: 204, headers: [Self.noStore])
    }

    /// What a link of `target` needs of its maker's grants, when it is made and at every use.
    static func requirements(target: [UInt8], isPrefix: Bool, allow: ShareRecord.Allow) -> [AccessRequirement] {
        switch (isPrefix, allow) {
        case (false, .read): [.key(.share, target), .key(.read, target)]
        case (false, .upload): [.key(.share, target), .key(.write, target)]
        case (true, .read): [.everyKey(.share, prefix: target), .listing(target)]
        case (true, .upload): [.everyKey(.share, prefix: target), .everyKey(.write, prefix: target)]
        }
    }

    func shareCatalog() throws(HTTPError) -> any AccessIndex {
        guard let catalog = access.directory.catalog else { throw .unavailable("The share links of the index are not open yet.") }
        return catalog
    }

    /// A share link's id: 32 lowercase hex digits (`KeyFactory.shareID`).
    static func isShareID(_ id: some StringProtocol) -> Bool {
        id.utf8.count == 32 && id.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// The link's URL: `--public-url`, else `http://` and the request's Host (a path alone
    /// without one), then `/s/ID` (`/s/ID/` for a prefix, whose names follow).
    func shareURL(_ share: ShareRecord, _ head: HTTPRequestHead) -> String {
        var base = publicURL
        if base.isEmpty, let host = head["Host"]?.trimmingOWS(), !host.isEmpty, host.utf8.count <= 255,
           host.utf8.allSatisfy({ (0x30...0x3A).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
                                  || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "[")
                                  || $0 == UInt8(ascii: "]") }) {
            base = "http://" + host
        }
        return base + "/s/" + share.id + (share.isPrefix ? "/" : "")
    }

    func json(_ share: ShareRecord, _ head: HTTPRequestHead) -> JSON {
        .object([
            ("id", .string(share.id)), ("url", .string(shareURL(share, head))),
            (share.isPrefix ? "prefix" : "key", .string(String(decoding: share.target, as: UTF8.self))),
            ("allow", .string(share.allow.rawValue)), ("created", .string(HTTPDate.formatRFC3339(share.created))),
            ("expires", share.expires.map { .string(HTTPDate.formatRFC3339($0)) } ?? .null),
            ("max_downloads", share.maxDownloads.map { .number($0) } ?? .null), ("downloads", .number(share.downloads)),
        ])
    }
}

/// The checks of a share link's request body.
extension BlobService {
    static func parseShareRequest(_ object: [String: Any]) throws(HTTPError) -> ShareRequest {
        let known: Set = ["key", "prefix", "allow", "expires_in", "max_downloads"]
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
            throw .badRequest("Unknown member \"\(unknown)\": a share link takes key or prefix, allow, expires_in and max_downloads.")
        }
        let (target, isPrefix) = try shareTarget(object["key"], object["prefix"])
        guard let allowText = object["allow"] as? String, let allow = ShareRecord.Allow(rawValue: allowText) else {
            throw .badRequest("\"allow\" must be \"read\" or \"upload\".")
        }
        let expiresIn = try Self.expiresIn(object["expires_in"])
        let maxDownloads = try Self.maxDownloads(object["max_downloads"])
        if maxDownloads != nil, allow != .read { throw .badRequest("\"max_downloads\" counts downloads: only a read link takes it.") }
        return ShareRequest(target: target, isPrefix: isPrefix, allow: allow, expiresIn: expiresIn, maxDownloads: maxDownloads)
    }

    /// Exactly one of `key` (a valid key) and `prefix` (non-empty, the start of a valid key).
    private static func shareTarget(_ key: Any?, _ prefix: Any?) throws(HTTPError) -> ([UInt8], Bool) {
        switch (key, prefix) {
        case (let key as String, nil):
            do throws(StoreError) { return (try BlobKey(validating: Array(key.utf8)).bytes, false) } catch {
                throw .badRequest("\"key\": \(error)")
            }
        case (nil, let prefix as String):
            let bytes = Array(prefix.utf8)
            // The start of a valid key: checked with a stand-in last byte, as grant prefixes are.
            guard !bytes.isEmpty, (try? BlobKey(validating: bytes + [UInt8(ascii: "x")])) != nil else {
                throw .badRequest("\"prefix\" must be the non-empty start of a valid key.")
            }
            return (bytes, true)
        case (nil, nil): throw .badRequest("Name the \"key\" or the \"prefix\" to share.")
        case (_?, _?) where key is String && prefix is String: throw .badRequest("Send \"key\" or \"prefix\", not both.")
        default: throw .badRequest("\"key\" or \"prefix\" must be a string.")
        }
    }

    /// `max_downloads`: a whole number from 1 to `maxShareDownloads`; nil when absent (no limit).
    private static func maxDownloads(_ value: Any?) throws(HTTPError) -> Int64? {
        guard let value, !(value is NSNull) else { return nil }
        guard let number = value as? NSNumber, String(cString: number.objCType) != "c",
              let count = Int64(exactly: number.doubleValue), (1...maxShareDownloads).contains(count) else {
            throw .badRequest("\"max_downloads\" must be a whole number from 1 to \(maxShareDownloads).")
        }
        return count
    }
}

import BlobStore
import Foundation
import HTTPCore
import MicroHTTPD

/// `/v1/admin/buckets/{bucket}/lifecycle`: a bucket's lifecycle rules as JSON, stored in the
/// catalog (`BucketSettingsService.set`) so that every node reads them on the access version. Needs
/// `admin` on the bucket. GET of unset rules is 404 `setting-not-found`, of an unknown bucket
/// 404 `not-found`; PUT answers 200 with the stored JSON; DELETE 204.
extension BlobService {
    /// GET, PUT and DELETE of a bucket's lifecycle rules.
    func lifecycle(_ head: HTTPRequestHead, bucket: String) throws -> HTTPRequestAction {
        guard try store.buckets.bucket(bucket) != nil else { throw StoreError.bucketNotFound }
        switch head.method {
        case "GET", "HEAD":
            guard let stored = try store.settings.stored(bucket, .lifecycle) else {
                throw HTTPError.settingNotFound("The bucket \(bucket) has no lifecycle rules.")
            }
            return .respond(HTTPResponse(status: 200, headers: [("Content-Type", "application/json"), Self.noStore],
                                         body: .bytes(Array(stored.utf8))))
        case "DELETE":
            try setLifecycle(bucket, to: nil)
            return .respond(HTTPResponse(status: 204, headers: [Self.noStore]))
        default:
            try Self.requireJSON(head)
            return .receive(BufferedBody(limit: Self.maxAdminBody * 4, committers: committers) { [self] body in
                do {
                    guard let body else { throw StoreError.tooLarge(limit: UInt64(Self.maxAdminBody * 4)) }
                    guard let value = try? JSONSerialization.jsonObject(with: Data(body)) else {
                        throw HTTPError.badRequest("The body must be a JSON object.")
                    }
                    let rules: [LifecycleRule]
                    do throws(LifecycleSettings.Invalid) {
                        rules = try LifecycleSettings.rules(fromJSON: value)
                    } catch .unsupported(let element) {
                        throw HTTPError.notImplemented(LifecycleSettings.Invalid.unsupported(element).description)
                    } catch {
                        throw HTTPError.badRequest(error.description)
                    }
                    let json = LifecycleSettings.json(rules)
                    try setLifecycle(bucket, to: json.serialized())
                    return Self.jsonResponse(status: 200, json)
                } catch {
                    return failure(error)
                }
            })
        }
    }

    /// Stores (nil removes) a bucket's lifecycle rules, puts them in force on this node at once,
    /// and stamps the bucket's blobs with their new deadlines in the background.
    private func setLifecycle(_ bucket: String, to value: String?) throws {
        try store.settings.set(bucket, .lifecycle, to: value)
    }
}

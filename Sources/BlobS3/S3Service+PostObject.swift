import BlobStore
import Foundation
import HTTPCore
import MicroHTTPD

#if canImport(Glibc)
import Glibc
import Access
#endif

/// POST Object: a browser form upload (`multipart/form-data`, as boto3's
/// `generate_presigned_post` makes it). The fields before the file are checked when the file
/// part begins (policy signature, expiry, conditions, the key's grants); the file then streams
/// into a new blob like a PutObject body, and is committed atomically at the end, or nothing is
/// stored.
extension S3Service {
    func receivePostObject(_ head: HTTPRequestHead, bucket: String, requestID: String) throws -> HTTPRequestAction {
        guard let boundary = head["Content-Type"].flatMap(MultipartForm.boundary) else {
            throw S3Error(.preconditionFailed, "Bucket POST must be of the enclosure-type multipart/form-data")
        }
        try requireBucket(bucket)
        return .receive(PostObjectBody(service: self, head: head, bucket: bucket, boundary: boundary, requestID: requestID))
    }

    /// Who signed a form's policy (SigV4 over the base64 policy), nil for an anonymous form
    /// (no policy) and in open access; and the policy.
    func postPrincipal(_ fields: [String: String]) throws -> (Authorized?, PostPolicy?) {
        guard let policyText = fields["policy"] else {
            if !access.isOpen, fields["x-amz-signature"] != nil || fields["x-amz-credential"] != nil || fields["signature"] != nil {
                throw S3Error(.invalidArgument, "Bucket POST must contain a field named 'policy' when it is signed.")
            }
            return (nil, nil)
        }
        let policy = try PostPolicy(base64: policyText)
        guard !access.isOpen else { return (nil, policy) }
        if let accessKey = fields["awsaccesskeyid"] {
            return (try postSigV2(fields, accessKey: accessKey, policy: policyText), policy)
        }
        guard fields["x-amz-algorithm"] == "AWS4-HMAC-SHA256", let credential = fields["x-amz-credential"],
              let signature = fields["x-amz-signature"], let amzDate = fields["x-amz-date"] else {
            throw S3Error(.invalidArgument, "Bucket POST must contain x-amz-algorithm AWS4-HMAC-SHA256, x-amz-credential, "
                          + "x-amz-date and x-amz-signature (SigV2 forms are not supported).")
        }
        let scope = credential.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard scope.count == 5, scope[3] == "s3", scope[4] == "aws4_request", amzDate.hasPrefix(scope[1]) else {
            throw S3Error(.invalidArgument, "x-amz-credential must be ACCESS_KEY/DATE/REGION/s3/aws4_request, of x-amz-date's day.")
        }
        guard let key = access.s3Key(scope[0]) else { throw unknownAccessKey(scope[0]) }
        let signed = SigV4.Signed(accessKey: scope[0], scopeDate: scope[1], region: scope[2], service: "s3", signedHeaders: [],
                                  signature: signature, amzDate: amzDate, payloadHash: "", expires: nil)
        let expected = SigV4.signature(secret: key.secret, signed, stringToSign: Array(policyText.utf8))
        guard AccessPolicy.constantTimeEqual(Array(expected.utf8), Array(signature.lowercased().utf8)) else {
            throw S3Error(.signatureDoesNotMatch,
                          "The request signature we calculated does not match the signature you provided. Check your key and signing method.")
        }
        return (Authorized(signed: signed, accessKey: scope[0], key: key), policy)
    }

    /// A SigV2 form (`AWSAccessKeyId`, `signature`: base64 HMAC-SHA1 of the base64 policy), as
    /// boto3 makes it unless told `signature_version="s3v4"`.
    private func postSigV2(_ fields: [String: String], accessKey: String, policy: String) throws -> Authorized {
        guard let signature = fields["signature"] else {
            throw S3Error(.invalidArgument, "Bucket POST must contain a field named 'signature' with 'AWSAccessKeyId'.")
        }
        guard let key = access.s3Key(accessKey) else { throw unknownAccessKey(accessKey) }
        let expected = SigV2.signature(secret: key.secret, stringToSign: Array(policy.utf8))
        guard AccessPolicy.constantTimeEqual(Array(expected.utf8), Array(signature.utf8)) else {
            throw S3Error(.signatureDoesNotMatch,
                          "The request signature we calculated does not match the signature you provided. Check your key and signing method.")
        }
        return Authorized(signed: nil, accessKey: accessKey, key: key)
    }

    /// What the form's fields store with the object: Content-Type and the other standard
    /// fields, and `x-amz-meta-*`.
    static func postAttributes(_ fields: [String: String], key: String) throws -> BlobAttributes {
        let metadata = fields.filter { $0.key.hasPrefix("x-amz-meta-") }.sorted { $0.key < $1.key }
            .map { (name: String($0.key.dropFirst("x-amz-meta-".count)), value: $0.value) }
        guard UploadAttributes.userMetadataBytes(metadata) <= UploadAttributes.maxUserMetadataBytes else {
            throw S3Error(.metadataTooLarge, "Your metadata headers exceed the maximum allowed metadata size.")
        }
        return try UploadAttributes.parse(contentType: fields["content-type"], cacheControl: fields["cache-control"],
                                          contentDisposition: fields["content-disposition"], contentEncoding: fields["content-encoding"],
                                          contentLanguage: nil, expires: fields["expires"], userMetadata: metadata, typeGuessedFrom: key)
    }

    /// The fields S3 takes that blobd does not keep: refused, not ignored.
    static func refuseUnsupportedPostFields(_ fields: [String: String]) throws(S3Error) {
        if let acl = fields["acl"], !["private", "bucket-owner-full-control"].contains(acl) {
            throw S3Error(.notImplemented, "blobd's S3 dialect keeps objects private; the canned ACL '\(acl)' is not supported.")
        }
        for name in ["tagging", "x-amz-storage-class", "x-amz-server-side-encryption", "x-amz-website-redirect-location",
                     "x-amz-object-lock-mode", "x-amz-object-lock-retain-until-date", "x-amz-object-lock-legal-hold"]
        where fields[name] != nil {
            throw S3Error(.notImplemented, "blobd's S3 dialect does not support the form field \(name).")
        }
    }

    /// The answer to a stored form upload: a redirect, or the status the form asked for.
    static func postAnswer(_ fields: [String: String], bucket: String, key: String, etag: String, location: String,
                           requestID: String, extra: [(name: String, value: String)]) -> HTTPResponse {
        var headers: [(name: String, value: String)] = [("ETag", etag), ("Location", location), ("x-amz-request-id", requestID)] + extra
        if let redirect = fields["success_action_redirect"] ?? fields["redirect"], var url = URLComponents(string: redirect),
           url.scheme != nil {
            var items = url.queryItems ?? []
            items += [URLQueryItem(name: "bucket", value: bucket), URLQueryItem(name: "key", value: key),
                      URLQueryItem(name: "etag", value: etag)]
            url.queryItems = items
            headers[1] = ("Location", url.string ?? redirect)
            return HTTPResponse(status: 303, headers: headers)
        }
        switch fields["success_action_status"] {
        case "200": return HTTPResponse(status: 200, headers: headers)
        case "201":
            let xml = XML.declaration + "<PostResponse>" + XML.element("Location", location) + XML.element("Bucket", bucket)
                + XML.element("Key", key) + XML.element("ETag", etag) + "</PostResponse>"
            return HTTPResponse(status: 201, headers: [("Content-Type", "application/xml")] + headers, body: .bytes(Array(xml.utf8)))
        default: return HTTPResponse(status: 204, headers: headers)
        }
    }
}

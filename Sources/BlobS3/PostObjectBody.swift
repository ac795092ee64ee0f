import BlobStore
import Foundation
import HTTPCore
import MicroHTTPD
import Access

/// The body of a POST Object: a `multipart/form-data` form read as it streams. The fields come
/// first; when the file part begins they are checked (`S3Service.postPrincipal`, the policy's
/// conditions, the key's grant) and a new blob is begun; the file's bytes go straight into it;
/// at the end, on the commit pool, its size and checksum are checked and it is committed.
/// Any failure is latched, the rest of the body dropped, and nothing is stored.
final class PostObjectBody: HTTPBodyConsumer {
    private struct Upload {
        let stream: BlobWriteStream
        let key: String
        let blobKey: BlobKey
        let attributes: BlobAttributes
        let condition: WriteCondition
        let digests: BodyDigests
        let expectedChecksum: String?
        let range: (min: UInt64, max: UInt64)?
        let fields: [String: String]
        /// Who posts it: checked again before the commit (a key revoked meanwhile).
        let caller: Principal
    }

    private let service: S3Service
    private let head: HTTPRequestHead
    private let bucket: String
    private let requestID: String
    private var form: MultipartForm
    private var fields: [String: String] = [:]
    private var upload: Upload?
    private var received: UInt64 = 0
    private var failure: (any Error)?

    init(service: S3Service, head: HTTPRequestHead, bucket: String, boundary: String, requestID: String) {
        self.service = service
        self.head = head
        self.bucket = bucket
        self.requestID = requestID
        form = MultipartForm(boundary: boundary)
    }

    func consume(_ chunk: UnsafeRawBufferPointer) {
        guard failure == nil else { return }
        do {
            try form.feed(chunk) { event in try self.handle(event) }
        } catch {
            failure = error
            upload?.stream.abandon()
            upload = nil
        }
    }

    private func handle(_ event: MultipartForm.Event) throws {
        switch event {
        case .field(let name, let value):
            let name = name.lowercased()
            guard fields[name] == nil else { throw S3Error(.invalidArgument, "The form field \(name) appears more than once.") }
            fields[name] = String(decoding: value, as: UTF8.self)
        case .fileStart(let filename, _):
            guard upload == nil else { throw S3Error(.invalidArgument, "POST requires exactly one file upload per request.") }
            upload = try start(filename: filename)
        case .fileBytes(let bytes):
            guard let upload else { return }
            received += UInt64(bytes.count)
            if let range = upload.range, received > range.max {
                throw S3Error(.entityTooLarge, "Your proposed upload exceeds the maximum allowed size")
            }
            try upload.stream.write(bytes)
        case .fileEnd:
            break
        }
    }

    /// The file part begins: every field is in, so the form is checked and the blob begun.
    private func start(filename: String) throws -> Upload {
        var fields = self.fields
        fields["bucket"] = bucket
        guard let template = fields["key"], !template.isEmpty else {
            throw S3Error(.invalidArgument, "Bucket POST must contain a field named 'key'.  If it is specified, please check the order of the fields.")
        }
        // A browser sends the file's name alone; some clients send a path.
        let name = filename.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        let key = template.replacingOccurrences(of: "${filename}", with: name)
        fields["key"] = key
        try S3Service.refuseUnsupportedPostFields(fields)
        let (authorized, policy) = try service.postPrincipal(fields)
        try policy?.check(fields, now: service.store.now())
        let blobKey = try S3Service.blobKey(bucket, key)
        let caller = try service.authorize(authorized, .key(.write, blobKey.bytes), noting: head)
        var condition = WriteCondition.always
        condition.onlyCreate = caller.write(blobKey) == .createOnly
        let (algorithm, expected) = try Self.checksum(fields)
        let digests = BodyDigests(checksum: algorithm, size: nil)
        let stream = try service.store.beginWrite(hasher: digests.hasher)
        return Upload(stream: stream, key: key, blobKey: blobKey, attributes: try S3Service.postAttributes(fields, key: key),
                      condition: condition, digests: digests, expectedChecksum: expected, range: policy?.lengthRange, fields: fields,
                      caller: caller)
    }

    /// The checksum the form asks for: an `x-amz-checksum-ALGORITHM` field to verify, or an
    /// `x-amz-checksum-algorithm` to compute.
    private static func checksum(_ fields: [String: String]) throws(S3Error) -> (ChecksumAlgorithm?, String?) {
        let given = fields.filter { $0.key.hasPrefix(ChecksumAlgorithm.fieldPrefix) && $0.key != "x-amz-checksum-algorithm" }
        guard given.count <= 1 else { throw S3Error(.invalidRequest, "Expecting a single x-amz-checksum- field.") }
        if let (name, value) = given.first {
            guard let algorithm = ChecksumAlgorithm(field: name), algorithm.isWellFormed(value) else {
                throw S3Error(.invalidRequest, "Value for \(name) is invalid.")
            }
            return (algorithm, value)
        }
        if let name = fields["x-amz-checksum-algorithm"] {
            return (try ChecksumAlgorithm(header: "x-amz-checksum-algorithm", name), nil)
        }
        return (nil, nil)
    }

    func finish(_ responder: any HTTPResponder) {
        let handover = Handover(value: self)
        service.committers.submit {
            handover.value.end { responder.send($0) }
        }
    }

    private func end(_ respond: @escaping (HTTPResponse) -> Void) {
        let verified: (upload: Upload, md5: [UInt8], checksum: String?)
        do {
            if let failure { throw failure }
            guard let upload else { throw S3Error(.invalidArgument, "POST requires exactly one file upload per request.") }
            guard form.fileEnded else { throw S3Error(.incompleteBody, "The form ended inside its file part.") }
            if let range = upload.range, received < range.min || received > range.max {
                throw received < range.min ? S3Error(.entityTooSmall, "Your proposed upload is smaller than the minimum allowed size")
                    : S3Error(.entityTooLarge, "Your proposed upload exceeds the maximum allowed size")
            }
            let values = upload.digests.values(try upload.stream.digests())
            if let expected = upload.expectedChecksum, expected != values.checksum {
                throw S3Error(.badDigest, "The \(upload.digests.algorithm?.rawValue.uppercased() ?? "") you specified did not match the calculated checksum.")
            }
            try service.access.recheck(upload.caller, .key(.write, upload.blobKey.bytes))
            verified = (upload, values.md5, upload.digests.algorithm.flatMap { algorithm in values.checksum.map { "\(algorithm.rawValue):\($0)" } })
        } catch {
            upload?.stream.abandon()
            return respond(service.failure(S3Error(Self.s3Error(error)), head: head, requestID: requestID))
        }
        let upload = verified.upload
        // tusd's pre-finish hook, as before a PutObject's commit (on this commit-pool thread).
        do {
            if let rejection = try service.preFinishComplete(head, bucket: bucket, key: upload.key) {
                upload.stream.abandon()
                return respond(rejection)
            }
        } catch {
            upload.stream.abandon()
            return respond(service.failure(S3Error(error), head: head, requestID: requestID))
        }
        upload.stream.commit(as: upload.blobKey, attributes: upload.attributes, md5: verified.md5, checksum: verified.checksum,
                             if: upload.condition, events: service.events("ObjectCreated:Post", upload.blobKey, head, requestID))
        { [service, head, bucket, requestID] result in
            switch result {
            case .success(let stored):
                let location = "/" + PercentEncoding.encodePath(bucket + "/" + upload.key)
                respond(S3Service.postAnswer(upload.fields, bucket: bucket, key: upload.key, etag: S3Service.etag(stored.record),
                                             location: location, requestID: requestID,
                                             extra: S3Service.checksumHeaders(stored.record, orSHA256: false)))
            case .failure(let error):
                respond(service.failure(S3Error(error), head: head, requestID: requestID))
            }
        }
    }

    /// A malformed form is S3's MalformedPOSTRequest.
    private static func s3Error(_ error: any Error) -> any Error {
        guard let malformed = error as? MultipartForm.Malformed else { return error }
        return S3Error(.malformedPOSTRequest, "The body of your POST request is not well-formed multipart/form-data (\(malformed.reason)).")
    }

    func abandon() {
        upload?.stream.abandon()
        upload = nil
    }
}

import BlobStore
import HTTPCore
import MicroHTTPD

/// CORS on the S3 listener: preflights answered before authentication, the headers every
/// answer carries (`CORSPolicy` decides), and PutBucketCors, GetBucketCors, DeleteBucketCors.
extension S3Service {
    /// A preflight: 200 with what the matching rule allows, else 403 AccessForbidden.
    func preflight(_ head: HTTPRequestHead, requestID: String) throws -> HTTPResponse {
        guard let headers = cors.preflight(head, bucket: try? Self.target(head.path).bucket) else {
            throw HTTPError.corsNotAllowed
        }
        return HTTPResponse(status: 200, headers: headers + [("x-amz-request-id", requestID)])
    }

    /// Every answer passes here just before it is sent: the CORS headers, written once for
    /// every operation. Nothing is done while no rule exists anywhere.
    public func finishing(_ response: inout HTTPResponse, for head: HTTPRequestHead) {
        guard cors.isActive, !CORSPolicy.isPreflight(head) else { return }
        // Without any bucket's rules the bucket does not matter: its path is not even decoded.
        cors.decorate(&response, head: head, bucket: cors.hasBucketRules ? try? Self.target(head.path).bucket : nil)
    }

    /// PutBucketCors: `CORSConfiguration` XML, kept as the JSON of `/v1/admin/buckets/B/cors`.
    func receivePutCORS(_ head: HTTPRequestHead, bucket: String, requestID: String) throws -> HTTPRequestAction {
        try requireBucket(bucket)
        let tooLarge = S3Error(.malformedXML, "The CORS configuration must be at most 64 KB.")
        return try receiveSetting(head, bucket: bucket, limit: CORSConfiguration.maximumSize, tooLarge: tooLarge,
                                  requestID: requestID) { [self] body in
            let configuration = try Self.corsConfiguration(xml: body)
            try setAccess(bucket, .cors, to: configuration.json.serialized())
            return HTTPResponse(status: 200, headers: [("x-amz-request-id", requestID)])
        }
    }

    /// GetBucketCors: the rules as XML; NoSuchCORSConfiguration without any.
    func getCORS(bucket: String, requestID: String) throws -> HTTPResponse {
        try requireBucket(bucket)
        guard let text = try accessSetting(bucket, .cors),
              let configuration = try? CORSConfiguration(jsonText: Array(text.utf8)) else {
            throw S3Error(.noSuchCORSConfiguration, "The CORS configuration does not exist")
        }
        return xmlResponse(Self.corsXML(configuration), requestID: requestID)
    }

    /// DeleteBucketCors: 204, with or without rules.
    func deleteCORS(bucket: String, requestID: String) throws -> HTTPResponse {
        try requireBucket(bucket)
        try setAccess(bucket, .cors, to: nil)
        return HTTPResponse(status: 204, headers: [("x-amz-request-id", requestID)])
    }

    /// Reads S3's `CORSConfiguration` XML: MalformedXML for a shape S3 refuses, InvalidRequest
    /// for a method it does not know.
    static func corsConfiguration(xml body: [UInt8]) throws -> CORSConfiguration {
        let root = try XML.parse(body, maxChildren: CORSConfiguration.maximumRules + 1, maxPerChild: 64)
        guard root.name == "CORSConfiguration" else { throw XMLReader.malformed }
        var rules: [CORSRule] = []
        for node in root.children {
            guard node.name == "CORSRule" else { throw XMLReader.malformed }
            func all(_ name: String) -> [String] { node.children.filter { $0.name == name }.map { $0.text.trimmingCharacters() } }
            var age: Int?
            if let text = node.value("MaxAgeSeconds") {
                guard let number = Int(text), number >= 0, number <= Int(Int32.max) else { throw XMLReader.malformed }
                age = number
            }
            let known: Set<String> = ["ID", "AllowedOrigin", "AllowedMethod", "AllowedHeader", "ExposeHeader", "MaxAgeSeconds"]
            guard node.children.allSatisfy({ known.contains($0.name) }) else { throw XMLReader.malformed }
            rules.append(CORSRule(id: node.value("ID"), allowedOrigins: all("AllowedOrigin"), allowedMethods: all("AllowedMethod"),
                                  allowedHeaders: all("AllowedHeader"), exposeHeaders: all("ExposeHeader"), maxAgeSeconds: age))
        }
        do throws(CORSConfiguration.Invalid) {
            return try CORSConfiguration(rules: rules)
        } catch {
            switch error {
            case .badMethod, .badOrigin: throw S3Error(.invalidRequest, error.description)
            case .tooManyRules, .malformed: throw S3Error(.malformedXML, "The XML you provided was not well-formed or did not "
                                                          + "validate against our published schema (\(error.description))")
            }
        }
    }

    /// The rules as S3's `CORSConfiguration` XML.
    static func corsXML(_ configuration: CORSConfiguration) -> String {
        var xml = XML.declaration + "<CORSConfiguration xmlns=\"\(XML.namespace)\">"
        for rule in configuration.rules {
            xml += "<CORSRule>"
            if let id = rule.id { xml += XML.element("ID", id) }
            for header in rule.allowedHeaders { xml += XML.element("AllowedHeader", header) }
            for method in rule.allowedMethods { xml += XML.element("AllowedMethod", method) }
            for origin in rule.allowedOrigins { xml += XML.element("AllowedOrigin", origin) }
            for header in rule.exposeHeaders { xml += XML.element("ExposeHeader", header) }
            if let age = rule.maxAgeSeconds { xml += XML.element("MaxAgeSeconds", String(age)) }
            xml += "</CORSRule>"
        }
        return xml + "</CORSConfiguration>"
    }
}

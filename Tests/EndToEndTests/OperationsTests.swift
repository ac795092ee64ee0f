import Foundation
import LiveBlobd
import Testing

/// Checks the Prometheus text exposition format line by line.
func isPrometheusText(_ text: String) -> Bool {
    let sample = #/^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? -?([0-9.eE+-]+|\+Inf|NaN)$/#
    for line in text.split(separator: "\n") {
        if line.hasPrefix("# HELP ") || line.hasPrefix("# TYPE ") { continue }
        if (try? sample.wholeMatch(in: String(line))) == nil { return false }
    }
    return true
}

/// The value of one sample line, e.g. `blobd_http_sent_bytes_total`.
func sample(_ text: String, _ name: String) -> Double? {
    for line in text.split(separator: "\n") where line.hasPrefix(name + " ") || line.hasPrefix(name + "{") {
        if line.hasPrefix(name + " ") || line.contains(name) { return Double(line.split(separator: " ").last ?? "") }
    }
    return nil
}

@Suite struct OperationsTests {
    @Test func metricsMoveAfterRequests() throws {
        let blobd = try BlobdProcess()
        let b = blobd.baseURL
        let before = try curl([b + "/metrics"])
        #expect(before.status == 200)
        #expect(before.header("Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)
        #expect(isPrometheusText(before.text))
        #expect(sample(before.text, "blobd_blobs_stored") == 0)

        #expect(try curl(["-X", "PUT", "--data-binary", "0123456789", b + "/v1/blobs/m"]).status == 201)
        #expect(try curl([b + "/v1/blobs/m"]).status == 200)
        #expect(try curl([b + "/v1/blobs/missing"]).status == 404)

        let after = try curl([b + "/metrics"]).text
        #expect(isPrometheusText(after), "\(after)")
        #expect(after.contains("blobd_http_requests_total{method=\"PUT\",route=\"/v1/blobs/{key}\",status=\"201\"} 1"))
        #expect(after.contains("blobd_http_requests_total{method=\"GET\",route=\"/v1/blobs/{key}\",status=\"200\"} 1"))
        #expect(after.contains("blobd_http_requests_total{method=\"GET\",route=\"/v1/blobs/{key}\",status=\"404\"} 1"))
        #expect(after.contains("blobd_errors_total{kind=\"not-found\"} 1"))
        #expect(after.contains("blobd_http_request_duration_seconds_count{route=\"/v1/blobs/{key}\"} 3"))
        #expect(sample(after, "blobd_http_received_bytes_total") == 10)
        #expect((sample(after, "blobd_http_sent_bytes_total") ?? 0) >= 10)
        #expect(sample(after, "blobd_blobs_stored") == 1)
        #expect(sample(after, "blobd_blob_bytes_stored") == 10)
        #expect(sample(after, "blobd_uploads_in_flight") == 0)
    }

    @Test func uploadsInFlightGauge() throws {
        let blobd = try BlobdProcess()
        let connection = try RawConnection(port: blobd.port)
        connection.send(Array("PUT /v1/blobs/slow HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc".utf8))
        #expect(eventually { (try? sample(curl([blobd.baseURL + "/metrics"]).text, "blobd_uploads_in_flight")) == 1 })
        connection.hangUp()
        #expect(eventually { (try? sample(curl([blobd.baseURL + "/metrics"]).text, "blobd_uploads_in_flight")) == 0 })
    }

    @Test func readyzTurnsUnreadyBelowMinimumFreeSpace() throws {
        let ready = try BlobdProcess()
        let ok = try curl([ready.baseURL + "/readyz"])
        #expect(ok.status == 200)
        let starved = try BlobdProcess(["--min-free-bytes", "1000000000000000000"])
        let unready = try curl([starved.baseURL + "/readyz"])
        #expect(unready.status == 503)
        #expect(unready.header("Content-Type") == "application/problem+json")
        #expect(try curl([starved.baseURL + "/healthz"]).status == 200, "still alive")
        let put = try curl(["-X", "PUT", "--data-binary", "x", starved.baseURL + "/v1/blobs/k"])
        #expect(put.status == 507)
        #expect(put.json["status"] as? Int == 507)
    }

    @Test func jsonLogsAreJSONAndNeverContainTokens() throws {
        let dir = TempDir()
        let tokens = dir.file("tokens", Array("s3cr3t-admin-token read,write,delete,admin\n".utf8))
        chmod(tokens, 0o600)
        let blobd = try BlobdProcess(["--tokens-file", tokens, "--log-format", "json"])
        let b = blobd.baseURL
        _ = try curl(["-X", "PUT", "--data-binary", "x", "-H", "Authorization: Bearer s3cr3t-admin-token", b + "/v1/blobs/logged%20key"])
        _ = try curl(["-H", "Authorization: Bearer s3cr3t-admin-token", b + "/v1/blobs/logged%20key"])
        _ = try curl(["-H", "Authorization: Bearer wrong-token-value", b + "/v1/blobs/logged%20key"])
        let made = try curl(["-X", "POST", "-H", "Authorization: Bearer s3cr3t-admin-token", "-H", "Content-Type: application/json",
                             "--data-binary", #"{"name": "json \"quoted\" key", "grants": ["read:*"]}"#, b + "/v1/admin/keys"]).json
        let keyToken = try #require(made["token"] as? String)
        _ = try curl(["-H", "Authorization: Bearer \(keyToken)", b + "/v1/blobs/logged%20key"])
        #expect(eventually { blobd.stderr.components(separatedBy: "\"msg\":\"request\"").count > 5 })
        // Every line is JSON, the announcement that blobd listens among them (issue 20 item 18).
        let lines = blobd.stderr.split(separator: "\n")
        #expect(lines.contains { $0.contains("\"msg\":\"blobd listening on http://127.0.0.1:") })
        var requests: [[String: Any]] = []
        for line in lines {
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object != nil, "not JSON: \(line)")
            if object?["msg"] as? String == "request" { requests.append(object ?? [:]) }
        }
        try #require(requests.count == 5)
        let put = try #require(requests.first)
        #expect(put["http.method"] as? String == "PUT")
        #expect(put["http.route"] as? String == "/v1/blobs/{key}")
        // Numbers are JSON numbers.
        #expect(put["http.status"] as? Int == 201)
        #expect(put["blob.key"] as? String == "logged key")
        #expect(put["http.bytes_received"] as? Int == 1)
        #expect(put["http.bytes_sent"] is NSNumber && put["http.duration_ms"] is NSNumber)
        #expect(put["client.address"] as? String != nil)
        // The principal: a token by its digest, none for a token that is not known, a catalog
        // key by its id and name.
        let digest = "token:" + sha256Hex(Array("s3cr3t-admin-token".utf8)).prefix(32)
        #expect(requests.map { $0["principal"] as? String } == [digest, digest, nil, digest, "key:" + (made["id"] as? String ?? "?")])
        #expect(requests[2]["principal"] is NSNull)
        #expect(requests.map { $0["principal.name"] as? String } == [nil, nil, nil, nil, #"json "quoted" key"#])
        let loaded = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .first { $0["msg"] as? String == "Tokens loaded" }
        #expect(loaded?["tokens.count"] as? Int == 1)
        #expect(!blobd.stderr.contains("s3cr3t-admin-token"))
        #expect(!blobd.stderr.contains("wrong-token-value"))
        #expect(!blobd.stderr.contains(keyToken))
    }

    @Test func logLevelFiltersAccessLog() throws {
        let blobd = try BlobdProcess(["--log-level", "warning"])
        _ = try curl([blobd.baseURL + "/healthz"])
        usleep(200_000)
        #expect(!blobd.stderr.contains("http.method"))
    }
}

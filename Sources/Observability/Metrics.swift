import Synchronization

/// Counters and histograms, rendered in the Prometheus text format (version 0.0.4).
public final class Metrics: Sendable {
    /// Upper bounds of the request-duration histogram, in seconds.
    static let durationBuckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300]

    private struct RequestLabels: Hashable {
        let method: String
        let route: String
        let status: String
    }

    private struct Histogram {
        var counts = [UInt64](repeating: 0, count: Metrics.durationBuckets.count)
        var sum = 0.0
        var count: UInt64 = 0

        mutating func record(_ duration: Double) {
            if let bucket = Metrics.durationBuckets.firstIndex(where: { duration <= $0 }) { counts[bucket] += 1 }
            sum += duration
            count += 1
        }
    }

    private struct State {
        var requests: [RequestLabels: UInt64] = [:]
        var durations: [String: Histogram] = [:]
        var bytesReceived: UInt64 = 0
        var bytesSent: UInt64 = 0
        var errors: [String: UInt64] = [:]
        var slowClientsClosed: [String: UInt64] = [:]
        var refusals: [AuthRefusal.Dialect: [AuthRefusal: UInt64]] = [:]
    }

    private let state = Mutex(State())
    private let uploadsInFlight = Atomic<Int>(0)

    /// The release serving, as `blobd_build_info{version=...}` shows it.
    public let version: String

    /// The event queue and its deliveries (`EventMetrics`).
    public let events = EventMetrics()

    /// The cluster node these metrics are of, a label on every sample; nil on a single node.
    public let node: String?

    /// Creates empty metrics for release `version` (on cluster node `node`).
    public init(version: String = "unknown", node: String? = nil) {
        self.version = version
        self.node = node
    }

    /// Counts a finished request.
    public func recordRequest(method: String, route: String, status: Int?, duration: Double, received: UInt64, sent: UInt64) {
        let labels = RequestLabels(method: method, route: route, status: status.map(String.init) ?? "none")
        state.withLock { state in
            state.requests[labels, default: 0] += 1
            // In place: a copy taken out and put back would copy the counts on every request.
            state.durations[route, default: Histogram()].record(duration)
            state.bytesReceived += received
            state.bytesSent += sent
        }
    }

    /// Counts an error answered with a problem of type `kind`.
    public func recordError(kind: String) {
        state.withLock { $0.errors[kind, default: 0] += 1 }
    }

    /// Counts a connection closed for a slow client: `idle` (a keep-alive connection past the
    /// head deadline with no new request), `head` or `body`.
    public func recordSlowClientClosed(reason: String) {
        state.withLock { $0.slowClientsClosed[reason, default: 0] += 1 }
    }

    /// Counts a request refused for its credential or its grants.
    public func recordRefusal(dialect: AuthRefusal.Dialect, reason: AuthRefusal) {
        state.withLock { $0.refusals[dialect, default: [:]][reason, default: 0] += 1 }
    }

    /// An upload started (+1) or ended (-1).
    public func uploadsInFlight(_ delta: Int) {
        uploadsInFlight.add(delta, ordering: .relaxed)
    }

    /// The exposition text; `blobs` adds the stored totals, `space` the data directory's free
    /// bytes (read at this render) and the least free space writes leave.
    public func render(blobs: (count: Int, bytes: UInt64)?, space: (free: UInt64?, minimum: UInt64)? = nil) -> String {
        let state = state.withLock { $0 }
        var out = ""
        func family(_ name: String, _ type: String, _ help: String) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        }
        family("blobd_build_info", "gauge", "The release serving; always 1.")
        out += "blobd_build_info{version=\"\(Self.labelValue(version))\"} 1\n"
        family("blobd_http_requests_total", "counter", "HTTP requests by method, route and status.")
        for (labels, count) in state.requests.sorted(by: { "\($0.key)" < "\($1.key)" }) {
            out += "blobd_http_requests_total{method=\"\(labels.method)\",route=\"\(labels.route)\",status=\"\(labels.status)\"} \(count)\n"
        }
        family("blobd_http_request_duration_seconds", "histogram", "Time from request head to completion.")
        for (route, histogram) in state.durations.sorted(by: { $0.key < $1.key }) {
            var cumulative: UInt64 = 0
            for (bound, count) in zip(Self.durationBuckets, histogram.counts) {
                cumulative += count
                out += "blobd_http_request_duration_seconds_bucket{route=\"\(route)\",le=\"\(bound)\"} \(cumulative)\n"
            }
            out += "blobd_http_request_duration_seconds_bucket{route=\"\(route)\",le=\"+Inf\"} \(histogram.count)\n"
            out += "blobd_http_request_duration_seconds_sum{route=\"\(route)\"} \(histogram.sum)\n"
            out += "blobd_http_request_duration_seconds_count{route=\"\(route)\"} \(histogram.count)\n"
        }
        family("blobd_http_received_bytes_total", "counter", "Request body bytes received.")
        out += "blobd_http_received_bytes_total \(state.bytesReceived)\n"
        family("blobd_http_sent_bytes_total", "counter", "Response body bytes sent.")
        out += "blobd_http_sent_bytes_total \(state.bytesSent)\n"
        family("blobd_uploads_in_flight", "gauge", "Uploads whose body is being received.")
        out += "blobd_uploads_in_flight \(uploadsInFlight.load(ordering: .relaxed))\n"
        family("blobd_errors_total", "counter", "Error responses by problem type.")
        for (kind, count) in state.errors.sorted(by: { $0.key < $1.key }) {
            out += "blobd_errors_total{kind=\"\(kind)\"} \(count)\n"
        }
        family("blobd_slow_connections_closed_total", "counter",
               "Connections closed by --header-timeout (reason idle or head) or --min-body-rate (body).")
        for (reason, count) in state.slowClientsClosed.sorted(by: { $0.key < $1.key }) {
            out += "blobd_slow_connections_closed_total{reason=\"\(reason)\"} \(count)\n"
        }
        family("blobd_auth_refusals_total", "counter",
               "Requests refused for their credential or grants (401, 403), by dialect and reason.")
        for dialect in AuthRefusal.Dialect.allCases {
            for reason in AuthRefusal.allCases {
                let count = state.refusals[dialect]?[reason] ?? 0
                out += "blobd_auth_refusals_total{dialect=\"\(dialect.rawValue)\",reason=\"\(reason.rawValue)\"} \(count)\n"
            }
        }
        out += events.render() + Self.renderStore(blobs: blobs, space: space)
        return node.map { Self.labelling(out, node: $0) } ?? out
    }

    /// The stored totals and the data directory's space, when given.
    private static func renderStore(blobs: (count: Int, bytes: UInt64)?, space: (free: UInt64?, minimum: UInt64)?) -> String {
        var out = ""
        func gauge(_ name: String, _ help: String, _ value: UInt64) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) gauge\n\(name) \(value)\n"
        }
        if let blobs {
            gauge("blobd_blobs_stored", "Blobs in the index.", UInt64(clamping: blobs.count))
            gauge("blobd_blob_bytes_stored", "Total size of the blobs in the index.", blobs.bytes)
        }
        if let space {
            if let free = space.free {
                gauge("blobd_data_free_bytes", "Bytes free for blobd on the data directory's file system (statvfs).", free)
            }
            gauge("blobd_data_min_free_bytes", "Writes that would leave less free than this get 507 (--min-free-bytes, at least 64 KiB).",
                  space.minimum)
        }
        return out
    }

    /// Every sample of `text` with `node="NODE"` as its first label.
    static func labelling(_ text: String, node: String) -> String {
        let label = "node=\"\(labelValue(node))\""
        return text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            guard !line.hasPrefix("#"), !line.isEmpty else { return String(line) }
            if let brace = line.firstIndex(of: "{") {
                return line[...brace] + label + "," + line[line.index(after: brace)...]
            }
            guard let space = line.firstIndex(of: " ") else { return String(line) }
            return line[..<space] + "{" + label + "}" + line[space...]
        }.joined(separator: "\n")
    }
}

extension Metrics {
    /// A label value in the exposition format: backslash, quote and newline escaped.
    static func labelValue(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(character)
            }
        }
        return out
    }
}

/// One upload counted in `blobd_uploads_in_flight`, from creation until `end()` (or deinit).
public final class InFlightUpload {
    private let metrics: Metrics
    private var ended = false

    public init(_ metrics: Metrics) {
        self.metrics = metrics
        metrics.uploadsInFlight(1)
    }

    deinit { end() }

    /// Leaves the gauge; idempotent.
    public func end() {
        guard !ended else { return }
        ended = true
        metrics.uploadsInFlight(-1)
    }
}

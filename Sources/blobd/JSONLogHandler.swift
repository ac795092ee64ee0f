import Foundation
import Logging

/// One JSON object per line on stderr: `{"ts":…,"level":…,"label":…,"msg":…, metadata…}`.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var object: [String: String] = [:]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) {
            object[key] = "\(value)"
        }
        object["ts"] = Self.timestamp()
        object["level"] = event.level.rawValue
        object["label"] = label
        object["msg"] = "\(event.message)"
        guard var data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else {
            return
        }
        data.append(0x0A)
        FileHandle.standardError.write(data)
    }

    private static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var t = tm()
        var seconds = now.tv_sec
        gmtime_r(&seconds, &t)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", t.tm_year + 1900, t.tm_mon + 1, t.tm_mday,
                      t.tm_hour, t.tm_min, t.tm_sec, now.tv_nsec / 1_000_000)
    }
}

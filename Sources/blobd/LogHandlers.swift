import BlobHTTP
import Foundation
import Logging
import Synchronization

/// `2026-11-22T20:04:44.123Z info blobd: MESSAGE key=value ...` per line, through `LogOutput`.
struct TextLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var line = LogTimestamp.now()
        line.append(UInt8(ascii: " "))
        line += event.level.rawValue.utf8
        line.append(UInt8(ascii: " "))
        line += label.utf8
        line += ": ".utf8
        line += "\(event.message)".utf8
        for (key, value) in merged(event.metadata).sorted(by: { $0.key < $1.key }) {
            line.append(UInt8(ascii: " "))
            line += key.utf8
            line.append(UInt8(ascii: "="))
            line += "\(value)".utf8
        }
        line.append(UInt8(ascii: "\n"))
        LogOutput.standardError.write(line, urgent: event.level >= .warning)
    }

    private func merged(_ extra: Logger.Metadata?) -> Logger.Metadata {
        guard let extra, !extra.isEmpty else { return metadata }
        return metadata.isEmpty ? extra : metadata.merging(extra) { $1 }
    }
}

/// One JSON object per line: `{"ts":…,"level":…,"label":…,"msg":…, metadata…}` (keys sorted).
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var fields: [String: String] = [:]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) {
            fields[key] = "\(value)"
        }
        fields["ts"] = String(decoding: LogTimestamp.now(), as: UTF8.self)
        fields["level"] = event.level.rawValue
        fields["label"] = label
        fields["msg"] = "\(event.message)"
        var line = JSON.object(fields.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }).utf8()
        line.append(UInt8(ascii: "\n"))
        LogOutput.standardError.write(line, urgent: event.level >= .warning)
    }
}


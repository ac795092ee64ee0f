import BlobCore
import HTTPCore
import Foundation
import Logging
import Synchronization
import Observability

/// A log handler that keeps its own metadata (the logger's), to which each event's is added.
protocol MetadataKeepingLogHandler: LogHandler {
    var metadata: Logger.Metadata { get set }
}

extension MetadataKeepingLogHandler {
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// The handler's metadata with the event's `extra` (which wins on a shared key).
    func merged(_ extra: Logger.Metadata?) -> Logger.Metadata {
        guard let extra, !extra.isEmpty else { return metadata }
        return metadata.isEmpty ? extra : metadata.merging(extra) { $1 }
    }
}

/// `2026-11-22T20:04:44.123Z info blobd: MESSAGE key=value ...` per line, through `LogOutput`;
/// values are quoted and escaped as the access log's are (`LogText`).
struct TextLogHandler: MetadataKeepingLogHandler {
    let label: String
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    func log(event: LogEvent) {
        var line = LogTimestamp.now()
        line.append(UInt8(ascii: " "))
        line += event.level.rawValue.utf8
        line.append(UInt8(ascii: " "))
        line += label.utf8
        line += ": ".utf8
        LogText.appendEscaped("\(event.message)", to: &line)
        for (key, value) in merged(event.metadata).sorted(by: { $0.key < $1.key }) {
            line.append(UInt8(ascii: " "))
            line += key.utf8
            line.append(UInt8(ascii: "="))
            LogText.appendValue("\(value)", to: &line)
        }
        line.append(UInt8(ascii: "\n"))
        LogOutput.standardError.write(line, urgent: event.level >= .warning)
    }
}

/// One JSON object per line: `{"ts":…,"level":…,"label":…,"msg":…, metadata…}` (keys sorted);
/// integer, floating-point and boolean metadata (`.stringConvertible`) as JSON numbers and booleans.
struct JSONLogHandler: MetadataKeepingLogHandler {
    let label: String
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    func log(event: LogEvent) {
        var fields: [String: [UInt8]] = [:]
        for (key, value) in merged(event.metadata) {
            fields[key] = Self.json(value)
        }
        JSONLogHandler.write(message: "\(event.message)", level: event.level, label: label, fields: fields)
    }

    /// One JSON line: `fields` (values already JSON) with ts, level, label and msg, keys sorted.
    static func write(message: String, level: Logger.Level, label: String, fields: [String: [UInt8]] = [:]) {
        var fields = fields
        fields["ts"] = JSON.string(String(decoding: LogTimestamp.now(), as: UTF8.self)).utf8()
        fields["level"] = JSON.string(level.rawValue).utf8()
        fields["label"] = JSON.string(label).utf8()
        fields["msg"] = JSON.string(message).utf8()
        var line: [UInt8] = [UInt8(ascii: "{")]
        for (i, (key, value)) in fields.sorted(by: { $0.key < $1.key }).enumerated() {
            if i > 0 { line.append(UInt8(ascii: ",")) }
            line += JSON.string(key).utf8()
            line.append(UInt8(ascii: ":"))
            line += value
        }
        line += "}\n".utf8
        LogOutput.standardError.write(line, urgent: level >= .warning)
    }

    /// A metadata value as JSON: numbers and booleans as such, anything else a string.
    static func json(_ value: Logger.Metadata.Value) -> [UInt8] {
        if case .stringConvertible(let convertible) = value {
            if let bool = convertible as? Bool { return Array((bool ? "true" : "false").utf8) }
            if convertible is any BinaryInteger { return Array("\(convertible)".utf8) }
            if let number = convertible as? Double, number.isFinite { return Array("\(number)".utf8) }
        }
        return JSON.string("\(value)").utf8()
    }
}

/// A line blobd always writes, whatever the level (`blobd listening on …`, a failure to
/// start): as it is in the text format, as a JSON line in the JSON format.
enum Announcement {
    nonisolated(unsafe) static var json = false

    static func write(_ message: String, level: Logger.Level = .notice) {
        if json {
            JSONLogHandler.write(message: message, level: level, label: "blobd")
            if level < .warning { LogOutput.standardError.flush() }
        } else {
            LogOutput.standardError.write(Array((message + "\n").utf8), urgent: true)
        }
    }
}


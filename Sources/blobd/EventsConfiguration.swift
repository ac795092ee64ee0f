import BlobStore
import Foundation
import HTTPCore
import OutboundHTTP
import Webhooks

extension Configuration {
    /// Reads the targets of `--notify-webhook` (and `BLOBD_NOTIFY_WEBHOOK_<NAME>`), their
    /// secrets and `--notify-retention`. Plain http:// only: blobd links no TLS, so an https://
    /// target is refused at start (put a TLS proxy in front of the receiver, or run it beside blobd).
    mutating func resolveEvents(webhooks: [String], secrets: [String], retention: String?, environment: [String: String]) throws {
        var pairs = try webhooks.map { try Self.pair($0, "notify-webhook") }
        var secretPairs = try secrets.map { try Self.pair($0, "notify-secret") }
        for (name, value) in environment.sorted(by: { $0.key < $1.key }) {
            if name.hasPrefix("BLOBD_NOTIFY_WEBHOOK_"), !webhooks.contains(where: { $0.hasPrefix(String(name.dropFirst(21)) + "=") }) {
                pairs.append((String(name.dropFirst("BLOBD_NOTIFY_WEBHOOK_".count)), value))
            }
            if name.hasPrefix("BLOBD_NOTIFY_SECRET_") {
                secretPairs.append((String(name.dropFirst("BLOBD_NOTIFY_SECRET_".count)), value))
            }
        }
        for (name, text) in pairs {
            try Self.checkTargetName(name, "notify-webhook")
            guard webhookTargets[name] == nil else { throw Invalid(description: "--notify-webhook: two targets are named '\(name)'") }
            do throws(HTTPClientError) {
                webhookTargets[name] = WebhookTarget(url: try ServerURL(parsing: text))
            } catch {
                if case .https = error {
                    throw Invalid(description: "--notify-webhook \(name): https:// targets are not supported (blobd links no TLS); "
                                  + "give an http:// URL, e.g. a TLS proxy on the same host, got '\(text)'")
                }
                throw Invalid(description: "--notify-webhook \(name): '\(text)' is not an http://HOST[:PORT]/PATH URL")
            }
        }
        for (name, text) in secretPairs {
            guard webhookTargets[name] != nil else {
                throw Invalid(description: "--notify-secret names '\(name)', which no --notify-webhook defines")
            }
            guard text.hasPrefix("whsec_"), let bytes = Data(base64Encoded: String(text.dropFirst(6))), bytes.count >= 16 else {
                throw Invalid(description: "--notify-secret \(name): expected whsec_ and the base64 of at least 16 bytes (Standard Webhooks)")
            }
            webhookTargets[name]?.secret = Array(bytes)
        }
        if let retention { notifyRetention = try SettingParsers.wholeSeconds(retention, "notify-retention", min: 1) }
    }

    /// `NAME=VALUE`.
    private static func pair(_ text: String, _ flag: String) throws -> (String, String) {
        guard let equals = text.firstIndex(of: "=") else { throw Invalid(description: "--\(flag) must be NAME=VALUE, got '\(text)'") }
        return (String(text[..<equals]), String(text[text.index(after: equals)...]))
    }

    private static func checkTargetName(_ name: String, _ flag: String) throws {
        guard !name.isEmpty, name.utf8.count <= 64, name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
            throw Invalid(description: "--\(flag): a target name is 1-64 letters, digits, '-' or '_', got '\(name)'")
        }
    }

    /// The check-config lines of the targets.
    var eventSummary: [String] {
        let targets = webhookTargets.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.url)\($0.value.secret == nil ? "" : " (signed)")" }
        return ["notify-webhook: \(targets.isEmpty ? "none" : targets.joined(separator: ", "))",
                "notify-retention: \(notifyRetention) s"]
    }
}

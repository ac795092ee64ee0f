import HTTPCore
import OutboundHTTP
import TusHooks

extension Serve {
    /// --hook-url, --hook-events, --hook-timeout, --hook-forward-credentials: nil without a hook
    /// URL; events or a timeout without one are a mistake.
    func resolveHooks(_ value: (String?, String) -> String?, environment: [String: String]) throws -> HookSettings? {
        let events = value(hookEvents, "hook-events")
        let timeout = value(hookTimeout, "hook-timeout")
        guard let text = value(hookUrl, "hook-url"), !text.isEmpty else {
            if events != nil || timeout != nil {
                throw Configuration.Invalid(description: "--hook-events and --hook-timeout need --hook-url")
            }
            return nil
        }
        let url: ServerURL
        do {
            url = try ServerURL(parsing: text)
        } catch {
            throw Configuration.Invalid(description: "--hook-url: \(error)")
        }
        var settings = HookSettings(url: url, events: Set(HookEvent.allCases))
        settings.forwardsCredentials = try hookForwardCredentials
            || Configuration.parseBool(environment["BLOBD_HOOK_FORWARD_CREDENTIALS"] ?? "", "hook-forward-credentials")
        if let events {
            settings.events = []
            for name in events.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !name.isEmpty {
                guard let event = HookEvent(rawValue: name) else {
                    throw Configuration.Invalid(description: "--hook-events takes pre-create and pre-finish, got '\(name)'")
                }
                settings.events.insert(event)
            }
        }
        if let timeout {
            let seconds = try SettingParsers.duration(timeout, "hook-timeout")
            guard seconds > 0, seconds <= 300 else {
                throw Configuration.Invalid(description: "--hook-timeout must be more than 0 and at most 300 seconds, got '\(timeout)'")
            }
            settings.timeout = seconds
        }
        return settings
    }
}

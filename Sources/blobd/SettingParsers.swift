import Foundation
import Logging

/// Parsers for the settings people write as other tools taught them: sizes with units
/// (`10G`), durations with units (`24h`), host names and an empty host in `--listen`, and the
/// common spellings of log levels. Each throws `Configuration.Invalid` naming the setting.
enum SettingParsers {
    /// Bytes per unit. K, M, G, T and KiB … TiB are binary (as nginx and systemd read `10G`);
    /// KB, MB, GB and TB are decimal (SI, as Docker and `numfmt --from=si` read them). Units are
    /// case-insensitive; a bare number is bytes.
    static let sizeUnits: [String: UInt64] = [
        "": 1, "b": 1,
        "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20,
        "g": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tib": 1 << 40,
        "kb": 1_000, "mb": 1_000_000, "gb": 1_000_000_000, "tb": 1_000_000_000_000,
    ]

    /// Parses a size: a whole number, then optionally a unit of `sizeUnits` (`10G`, `512 MiB`).
    static func size(_ text: String, _ name: String) throws -> UInt64 {
        let invalid = Configuration.Invalid(description:
            "--\(name) must be a whole number of bytes, optionally with a unit (K, M, G, T, KiB … TiB, KB … TB), got '\(text)'")
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let digits = trimmed.prefix { $0.isASCII && $0.isNumber }
        let unit = trimmed.dropFirst(digits.count).trimmingCharacters(in: .whitespaces).lowercased()
        guard !digits.isEmpty, let number = UInt64(digits), let scale = sizeUnits[unit] else { throw invalid }
        let (bytes, overflow) = number.multipliedReportingOverflow(by: scale)
        guard !overflow else { throw invalid }
        return bytes
    }

    /// Seconds per duration unit; a bare number is seconds.
    static let durationUnits: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86400]

    /// The longest duration accepted (10 years): far beyond any sensible setting, and small
    /// enough that no arithmetic on it can overflow.
    static let maxDuration: Double = 3650 * 86400

    /// Parses a duration in seconds: `90`, `90s`, `15m`, `24h`, `7d`, or a sum of them as Go
    /// and systemd write it (`1h30m`); numbers may have a fraction (`1.5h`, `0.5`).
    static func duration(_ text: String, _ name: String) throws -> Double {
        let invalid = Configuration.Invalid(description:
            "--\(name) must be a duration: seconds, or a number with a unit s, m, h or d (90s, 15m, 24h, 7d, 1h30m), got '\(text)'")
        var rest = Substring(text.trimmingCharacters(in: .whitespaces).lowercased())
        guard !rest.isEmpty else { throw invalid }
        var total = 0.0, parts = 0
        while !rest.isEmpty {
            parts += 1
            let number = rest.prefix { ($0.isASCII && $0.isNumber) || $0 == "." }
            rest = rest.dropFirst(number.count)
            guard !number.isEmpty, number.first != ".", let value = Double(number) else { throw invalid }
            var scale = 1.0
            if let unit = rest.first {
                guard let unitScale = durationUnits[unit] else { throw invalid }
                scale = unitScale
                rest = rest.dropFirst()
            } else if parts > 1 {
                throw invalid  // `1h30`: a bare number only stands alone
            }
            total += value * scale
            guard total <= maxDuration else {
                throw Configuration.Invalid(description: "--\(name) must be at most 3650 days, got '\(text)'")
            }
        }
        return total
    }

    /// A duration that must be whole seconds, at least `min`.
    static func wholeSeconds(_ text: String, _ name: String, min: Int = 0) throws -> Int {
        let seconds = try duration(text, name)
        guard seconds == seconds.rounded(), seconds >= Double(min) else {
            throw Configuration.Invalid(description: "--\(name) must be a whole number of seconds ≥ \(min), got '\(text)'")
        }
        return Int(seconds)
    }

    /// Parses `HOST:PORT`. `[::1]:8080` for IPv6; an empty host or `*` (`:8080`) is every IPv4
    /// address (0.0.0.0), as nginx's `listen 8080`; a host name is resolved now, to its first
    /// IPv4 address, else its first IPv6 one.
    static func listen(_ text: String, _ name: String = "listen") throws -> (host: String, port: UInt16) {
        guard let colon = text.lastIndex(of: ":") else {
            throw Configuration.Invalid(description: "--\(name) must be HOST:PORT, got '\(text)'")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard let port = UInt16(text[text.index(after: colon)...]) else {
            throw Configuration.Invalid(description: "--\(name) must be HOST:PORT with a port 0-65535, got '\(text)'")
        }
        if host.isEmpty || host == "*" { return ("0.0.0.0", port) }
        guard let address = resolve(host) else {
            throw Configuration.Invalid(description: "--\(name): '\(host)' is neither an IP address nor a host name that resolves")
        }
        return (address, port)
    }

    /// `host` as an address literal: itself if it is one, else what the resolver says.
    static func resolve(_ host: String) -> String? {
        var v4 = in_addr(), v6 = in6_addr()
        if inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1 { return host }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &list) == 0, let list else { return nil }
        defer { freeaddrinfo(list) }
        var addresses: [(isIPv4: Bool, text: String)] = []
        for entry in sequence(first: list, next: { $0.pointee.ai_next }) {
            guard let address = entry.pointee.ai_addr else { continue }
            var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            guard getnameinfo(address, entry.pointee.ai_addrlen, &buffer, socklen_t(buffer.count), nil, 0, NI_NUMERICHOST) == 0 else { continue }
            let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            addresses.append((entry.pointee.ai_family == AF_INET, text))
        }
        return (addresses.first { $0.isIPv4 } ?? addresses.first)?.text
    }

    /// Log level spellings of syslog, nginx and friends, to swift-log's levels.
    static let logLevelAliases: [String: Logger.Level] = [
        "trace": .trace, "debug": .debug, "info": .info, "notice": .notice,
        "warn": .warning, "warning": .warning, "err": .error, "error": .error,
        "crit": .critical, "critical": .critical,
    ]

    /// Parses a log level (case-insensitive; `warn`, `err` and `crit` too).
    static func logLevel(_ text: String) throws -> Logger.Level {
        guard let level = logLevelAliases[text.trimmingCharacters(in: .whitespaces).lowercased()] else {
            throw Configuration.Invalid(description:
                "--log-level must be one of trace, debug, info, notice, warn(ing), err(or) or crit(ical), got '\(text)'")
        }
        return level
    }
}

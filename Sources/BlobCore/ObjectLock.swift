/// S3 Object Lock on one version: a retention (a mode and a date until which the version may not
/// be removed) and a legal hold (no date; on until taken off). The catalog keeps it per version
/// (`lock_mode`, `lock_until`, `legal_hold`) and decides every removal against it inside the
/// transaction that would remove the version, on the server's clock.
public struct ObjectLock: Sendable, Equatable {
    /// GOVERNANCE (a caller with `admin` on the bucket may bypass it, naming
    /// `x-amz-bypass-governance-retention`) or COMPLIANCE (nobody may).
    public enum Mode: String, Sendable, Equatable {
        case governance = "GOVERNANCE"
        case compliance = "COMPLIANCE"
    }

    public var mode: Mode?
    /// Seconds since the epoch; the retention is in force while it is after now.
    public var retainUntil: Int64?
    public var legalHold: Bool

    public init(mode: Mode? = nil, retainUntil: Int64? = nil, legalHold: Bool = false) {
        self.mode = mode
        self.retainUntil = retainUntil
        self.legalHold = legalHold
    }

    /// No retention and no legal hold.
    public static let unlocked = ObjectLock()

    /// The lock kept in columns `lock_mode`, `lock_until` and `legal_hold`; nil when they name
    /// neither a retention nor a legal hold.
    public init?(mode: String?, until: Int64?, legalHold: Bool) {
        let mode = mode.flatMap(Mode.init(rawValue:))
        guard mode != nil || legalHold else { return nil }
        self.init(mode: mode, retainUntil: mode == nil ? nil : until, legalHold: legalHold)
    }

    /// The retention's mode while it is in force at `now`; nil once it has passed (or none).
    public func retention(at now: Int64) -> Mode? {
        guard let mode, let retainUntil, retainUntil > now else { return nil }
        return mode
    }

    /// Why a version under this lock may not be removed at `now` (`.objectLocked`), nil when it
    /// may: a legal hold, a COMPLIANCE retention, or a GOVERNANCE one not bypassed.
    public func removalFailure(at now: Int64, bypassingGovernance: Bool) -> StoreError? {
        if legalHold { return .objectLocked }
        switch retention(at: now) {
        case nil: return nil
        case .compliance: return .objectLocked
        case .governance: return bypassingGovernance ? nil : .objectLocked
        }
    }

    /// When a removal refused at `now` may next be allowed: the retention's end, and a day on
    /// for a legal hold (which has no end the lock knows of).
    public func nextRemovalCheck(after now: Int64) -> Int64 {
        guard retention(at: now) != nil, let until = retainUntil else { return now + 86_400 }
        return legalHold ? max(until, now + 86_400) : until
    }

    /// Why this lock's retention may not become `new` at `now`: extending it (a later date, the
    /// same mode, or GOVERNANCE made COMPLIANCE) is always allowed; shortening, removing or
    /// weakening a retention in force is refused for COMPLIANCE, and for GOVERNANCE unless bypassed.
    public func retentionChangeFailure(to new: ObjectLock, at now: Int64, bypassingGovernance: Bool) -> StoreError? {
        guard let current = retention(at: now), let until = retainUntil else { return nil }
        let keeps = new.mode != nil && (new.retainUntil ?? Int64.min) >= until
            && (new.mode == current || new.mode == .compliance)
        if keeps { return nil }
        return current == .governance && bypassingGovernance ? nil : .objectLocked
    }
}

/// A bucket's Object Lock configuration (S3 PutObjectLockConfiguration): enabled (the bucket
/// was made with Object Lock, or had it turned on; its versioning stays enabled), and a default
/// retention each new version gets. Kept as the bucket setting `object-lock`, as text:
/// `Enabled`, or `Enabled MODE Nd` / `Enabled MODE Ny` (days or years).
public struct ObjectLockConfiguration: Sendable, Equatable {
    public var defaultMode: ObjectLock.Mode?
    public var days: Int?
    public var years: Int?

    public init(defaultMode: ObjectLock.Mode? = nil, days: Int? = nil, years: Int? = nil) {
        self.defaultMode = defaultMode
        self.days = days
        self.years = years
    }

    /// The stored text.
    public var stored: String {
        guard let defaultMode else { return "Enabled" }
        if let years { return "Enabled \(defaultMode.rawValue) \(years)y" }
        return "Enabled \(defaultMode.rawValue) \(days ?? 0)d"
    }

    /// The configuration of stored text; nil if it does not read.
    public init?(stored: String) {
        let parts = stored.split(separator: " ")
        guard parts.first == "Enabled" else { return nil }
        if parts.count == 1 { self.init(); return }
        guard parts.count == 3, let mode = ObjectLock.Mode(rawValue: String(parts[1])), let unit = parts[2].last,
              let count = Int(parts[2].dropLast()), (1...36_500).contains(count) else { return nil }
        switch unit {
        case "d": self.init(defaultMode: mode, days: count)
        case "y": self.init(defaultMode: mode, years: min(count, 100))
        default: return nil
        }
    }

    /// The lock a version written at `now` gets: the default retention (a year is 365 days), or nil.
    public func defaultLock(at now: Int64) -> ObjectLock? {
        guard let defaultMode else { return nil }
        let days = Int64(days ?? 0) + Int64(years ?? 0) * 365
        return ObjectLock(mode: defaultMode, retainUntil: now + days * 86_400)
    }
}

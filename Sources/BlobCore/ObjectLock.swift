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

import BlobStore
import Foundation

/// What the tests' settings do (see `TestSettings`, nil in production): the store is handed
/// hooks only when a test asks for them, so its write path holds none of this.
extension TestSettings {
    /// SIGKILL at `crashAt`; once a new version is linked, a pause of `commitDelay` (at most
    /// 60 s), so a test can hold a commit while it probes the server.
    var commitHooks: CommitHooks? {
        guard crashAt != nil || commitDelay > 0 else { return nil }
        let (crashAt, delay) = (crashAt, commitDelay)
        return CommitHooks { step in
            if step == crashAt { kill(getpid(), SIGKILL) }
            if step == .afterLink && delay > 0 { usleep(UInt32(min(delay, 60) * 1_000_000)) }
        }
    }

    /// After each migrated batch, so that a test can interrupt a small migration.
    func pauseAfterMigrationBatch() {
        if migrationDelay > 0 { usleep(UInt32(min(migrationDelay, 10) * 1_000_000)) }
    }
}

import Foundation
import Testing
@testable import BlobStore
@testable import CatalogPostgres
@testable import CatalogSQLite

extension CatalogConformance {
    /// Object Lock per version (issue 25): retention and legal hold kept on current and
    /// noncurrent versions, every removal decided against them inside its transaction, and
    /// retention changes that may only extend. Every backend.
    @Suite struct ObjectLocks {
        static let later = Int64(time(nil)) + 86_400

        /// A COMPLIANCE version cannot be removed, not even bypassing governance, nor its
        /// retention shortened or removed; it can be extended. A delete marker over it is fine.
        @Test(arguments: Backend.all)
        func complianceBindsEveryone(_ backend: Backend) throws {
            let index = try backend.open()
            let stored = try Versions.commit(index, try record("lock/c"), .enabled)
            let locked = try index.setLock(stored.key, id: nil, retention: ObjectLock(mode: .compliance, retainUntil: Self.later),
                                           legalHold: nil, bypassGovernance: false)
            #expect(locked.record.lock == ObjectLock(mode: .compliance, retainUntil: Self.later))
            #expect(try index.record(for: stored.key)?.lock == locked.record.lock)
            var bypass = WriteCondition.always
            bypass.bypassGovernance = true
            #expect(throws: StoreError.objectLocked) { try index.removeVersion(stored.key, id: stored.version, if: bypass) }
            for weaker in [ObjectLock.unlocked, ObjectLock(mode: .compliance, retainUntil: Self.later - 1),
                           ObjectLock(mode: .governance, retainUntil: Self.later + 10)] {
                #expect(throws: StoreError.objectLocked) {
                    try index.setLock(stored.key, id: stored.version, retention: weaker, legalHold: nil, bypassGovernance: true)
                }
            }
            _ = try index.setLock(stored.key, id: stored.version, retention: ObjectLock(mode: .compliance, retainUntil: Self.later + 60),
                                  legalHold: nil, bypassGovernance: false)
            // A delete marker keeps the version (now noncurrent, still locked).
            _ = try index.deleteMarking(stored.key, marker: Versions.marker(stored.key), if: Versions.versioning(.enabled))
            #expect(try index.version(stored.key, id: stored.version)?.record.lock.retainUntil == Self.later + 60)
            #expect(throws: StoreError.objectLocked) { try index.removeVersion(stored.key, id: stored.version, if: bypass) }
            #expect(try index.garbage().isEmpty)
        }

        /// GOVERNANCE yields only to the bypass; a legal hold to nothing, until it is taken off;
        /// a retention that has passed binds nothing.
        @Test(arguments: Backend.all)
        func governanceLegalHoldAndPassedRetention(_ backend: Backend) throws {
            let index = try backend.open()
            let first = try Versions.commit(index, try record("lock/g"), .enabled)
            let second = try Versions.commit(index, try record("lock/g"), .enabled)
            _ = try index.setLock(first.key, id: first.version, retention: ObjectLock(mode: .governance, retainUntil: Self.later),
                                  legalHold: true, bypassGovernance: false)
            #expect(throws: StoreError.objectLocked) { try index.removeVersion(first.key, id: first.version, if: .always) }
            #expect(throws: StoreError.objectLocked) {
                try index.setLock(first.key, id: first.version, retention: .unlocked, legalHold: nil, bypassGovernance: false)
            }
            var bypass = WriteCondition.always
            bypass.bypassGovernance = true
            #expect(throws: StoreError.objectLocked, "the legal hold holds") {
                try index.removeVersion(first.key, id: first.version, if: bypass)
            }
            _ = try index.setLock(first.key, id: first.version, retention: nil, legalHold: false, bypassGovernance: false)
            #expect(throws: StoreError.objectLocked) { try index.removeVersion(first.key, id: first.version, if: .always) }
            #expect(try index.removeVersion(first.key, id: first.version, if: bypass).removed?.record.version == first.version)
            // A passed retention binds nothing.
            _ = try index.setLock(second.key, id: nil, retention: ObjectLock(mode: .compliance, retainUntil: 1_000),
                                  legalHold: nil, bypassGovernance: false)
            #expect(try index.removeVersion(second.key, id: second.version, if: .always).removed != nil)
            #expect(throws: StoreError.notFound) {
                try index.setLock(second.key, id: nil, retention: nil, legalHold: true, bypassGovernance: false)
            }
        }
    }
}

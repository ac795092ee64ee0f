import Testing
@testable import BlobStore

/// The store's source of each bucket's versioning: every commit of every dialect asks it, so it
/// must answer any number of times (a closure kept in a Mutex used to be wrapped in another
/// thunk per read, until a few thousand writes overflowed the stack).
@Suite struct VersioningSourceTests {
    final class Fixed: BucketVersioningLookup {
        func versioning(of bucket: Substring) -> BucketVersioning {
            bucket == "versioned" ? .enabled : bucket == "paused" ? .suspended : .unversioned
        }
    }

    @Test func answersEveryBucketAnyNumberOfTimes() throws {
        let source = VersioningSource()
        let key = try BlobKey("versioned/a/b")
        #expect(source.versioning(of: key) == .unversioned, "nothing wired: unversioned")
        source.set(Fixed())
        for _ in 0..<200_000 { #expect(source.versioning(of: key) == .enabled) }
        #expect(source.versioning(of: try BlobKey("paused/k")) == .suspended)
        #expect(source.versioning(of: try BlobKey("versioned")) == .enabled, "a key without a slash is its own bucket")
        #expect(source.versioning(of: try BlobKey("other/versioned")) == .unversioned)
    }
}

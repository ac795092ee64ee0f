import Foundation
import LiveBlobd
import Testing

/// The web page as a newcomer finds it (issue 35): open access without a token (item 13), New
/// bucket (item 14), and the folder view and versions (item 17), each a step of
/// Tests/Browser/ui_newcomer_test.py in headless Chromium against a blobd of its own, with its S3
/// listener. Screenshots go to .build/ui-screenshots.
@Suite(.serialized) struct WebPageNewcomerTests {
    /// Runs `step` against a blobd started with `arguments` (none: open access, as `make run`)
    /// and checks its screenshots were taken; an issue when Chromium is not installed.
    func run(_ step: String, _ arguments: [String] = [], screenshots names: [String]) throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"),
              FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver") else {
            Issue.record("chromium or chromium-driver is not installed: `make test` installs them")
            return
        }
        let dir = TempDir("blobd-ui-newcomer")
        let blobd = try BlobdProcess(["--s3-listen", "127.0.0.1:0"] + arguments, dataDir: dir.path + "/data")
        let screenshots = WebPageTests.root.appendingPathComponent(".build/ui-screenshots").path
        for name in names { try? FileManager.default.removeItem(atPath: screenshots + "/\(name).png") }
        let result = try LiveBlobd.run("/usr/bin/env", [
            "BASE=\(blobd.baseURL)", "S3=http://127.0.0.1:\(blobd.s3Port ?? 0)", "OUT=\(screenshots)", "WORK=\(dir.path)",
            "ADMIN=\(WebPageTests.adminToken)", "READER=\(WebPageTests.readerToken)",
            "python3", WebPageTests.root.appendingPathComponent("Tests/Browser/ui_newcomer_test.py").path, step,
        ], timeout: 180)
        let output = String(decoding: result.stdout, as: UTF8.self)
        #expect(result.status == 0, "\(output)\n\(result.stderr)")
        #expect(output.contains("\(step): all steps passed"), "\(output)")
        for name in names {
            #expect(FileManager.default.fileExists(atPath: screenshots + "/\(name).png"), "screenshot \(name)")
        }
    }

    /// Item 13: without a tokens file (as `make run` starts blobd) the page needs no token, says
    /// so, and browses, uploads and downloads.
    @Test(.timeLimit(.minutes(3))) func openAccessPageNeedsNoToken() throws {
        try run("open-access", screenshots: ["open-access", "open-access-upload"])
    }

    /// Item 13: with a tokens file the page still asks for a token; its anonymous grants let a
    /// visitor go on without one, read-only.
    @Test(.timeLimit(.minutes(3))) func tokensFilePageStillAsksForToken() throws {
        let dir = TempDir("blobd-ui-tokens")
        let tokens = dir.file("tokens", Array("\(WebPageTests.adminToken) read,write,delete,share,admin\nanonymous read:photos\n".utf8))
        chmod(tokens, 0o600)
        try run("tokens-file", ["--tokens-file", tokens], screenshots: ["login-anonymous"])
    }

    /// Item 14: the root lists GET /v1/buckets; New bucket makes an S3 bucket (versioned if
    /// asked) and refuses an invalid name in the dialog.
    @Test(.timeLimit(.minutes(3))) func newBucketFromPage() throws {
        try run("new-bucket", screenshots: ["new-bucket-invalid", "buckets"])
    }

    /// Item 17: files uploaded together are each listed once, without a reload.
    @Test(.timeLimit(.minutes(3))) func multiFileUploadListsEachFileOnce() throws {
        try run("multi-upload", screenshots: ["multi-upload"])
    }

    /// Item 17: S3 folder markers (`dir/`) are named rows with details, and can be deleted.
    @Test(.timeLimit(.minutes(3))) func folderMarkersHaveNames() throws {
        try run("folder-markers", screenshots: ["folder-marker"])
    }

    /// Item 17: a blob's versions: listed, one downloaded, one restored; a deleted blob restored.
    @Test(.timeLimit(.minutes(3))) func versionsViewListsDownloadsRestores() throws {
        try run("versions", screenshots: ["versions", "versions-restored", "versions-deleted", "versions-undeleted"])
    }
}

import Testing
@testable import BlobS3

/// max-keys, max-uploads and max-parts: 1000 when absent, at most 1000, and a clear
/// InvalidArgument for anything that is not a whole number of at least the least allowed.
@Suite struct PageSizeTests {
    @Test func pageSizes() throws {
        #expect(try S3Service.pageSize("max-keys", nil) == 1000)
        #expect(try S3Service.pageSize("max-keys", "0") == 0)
        #expect(try S3Service.pageSize("max-keys", "7") == 7)
        #expect(try S3Service.pageSize("max-uploads", "5000") == 1000)
        #expect(try S3Service.pageSize("max-parts", "1", least: 1) == 1)
    }

    @Test(arguments: [("max-keys", "-1", 0, "max-keys must be a non-negative integer."),
                      ("max-uploads", "ten", 0, "max-uploads must be a non-negative integer."),
                      ("max-keys", "99999999999999999999", 0, "max-keys must be a non-negative integer."),
                      ("max-parts", "0", 1, "max-parts must be a positive integer.")])
    func refused(_ name: String, _ text: String, _ least: Int, _ message: String) {
        do {
            _ = try S3Service.pageSize(name, text, least: least)
            Issue.record("\(name)=\(text) was accepted")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message == message)
        }
    }
}

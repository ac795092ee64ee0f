import Foundation
import LiveBlobd
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A real client's conditional GET; the conditional-request semantics are in
/// HTTPSemanticsTests/ConditionalTests, in process and live.
@Suite struct ConditionalTests {
    @Test func urlSessionConditionalGet() async throws {
        let blobd = try BlobdProcess()
        let url = URL(string: blobd.baseURL + "/v1/blobs/u")!
        _ = try curl(["-X", "PUT", "--data-binary", "session", url.absoluteString])
        let session = URLSession(configuration: .ephemeral)
        let (_, first) = try await session.data(from: url)
        let etag = try #require((first as? HTTPURLResponse)?.value(forHTTPHeaderField: "ETag"))
        var request = URLRequest(url: url)
        request.setValue(etag, forHTTPHeaderField: "If-None-Match")
        request.cachePolicy = .reloadIgnoringLocalCacheData
        let (data, response) = try await session.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 304)
        #expect(data.isEmpty)
    }
}

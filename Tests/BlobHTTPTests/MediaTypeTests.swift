import BlobStore
import Testing
@testable import BlobAPIv1
@testable import HTTPCore

@Suite struct MediaTypeTests {
    @Test func guessesFromTheLastSegmentsExtension() {
        #expect(MediaTypes.stored(sent: nil, name: "photos/a.JPG") == "image/jpeg")
        #expect(MediaTypes.stored(sent: "application/x-www-form-urlencoded", name: "a.json") == "application/json")
        #expect(MediaTypes.stored(sent: "Application/X-WWW-Form-Urlencoded ; charset=x", name: "a.css") == "text/css")
        #expect(MediaTypes.stored(sent: "application/x-www-form-urlencoded", name: nil) == "application/octet-stream")
        #expect(MediaTypes.stored(sent: "text/x-mine", name: "a.jpg") == "text/x-mine")
        #expect(MediaTypes.stored(sent: nil, name: "a.jpg/readme") == "application/octet-stream", "only the last segment")
        #expect(MediaTypes.stored(sent: nil, name: "archive.tar.gz") == "application/gzip")
        #expect(MediaTypes.stored(sent: nil, name: "dot.") == "application/octet-stream")
        #expect(MediaTypes.stored(sent: nil, name: ".png") == "image/png")
    }

    @Test func contentAddressIsSixtyFourHexDigits() throws {
        let hex = String(repeating: "0f", count: 32)
        #expect(try BlobKey(hex).contentAddress == [UInt8](repeating: 0x0F, count: 32))
        #expect(try BlobKey(hex.uppercased()).contentAddress == [UInt8](repeating: 0x0F, count: 32))
        #expect(try BlobKey(String(hex.dropLast())).contentAddress == nil)
        #expect(try BlobKey(String(hex.dropLast()) + "g").contentAddress == nil)
        #expect(try BlobKey("a/" + String(hex.dropFirst(2))).contentAddress == nil)
    }

    @Test func metadataFieldNames() {
        #expect(BlobService.metadataFieldName("camera") == "Blob-Meta-Camera")
        #expect(BlobService.metadataFieldName("taken-at") == "Blob-Meta-Taken-At")
    }
}

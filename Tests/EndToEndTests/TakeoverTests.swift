import Foundation
import LiveBlobd
import Testing

/// Issue 20, item 14: a request whose client hangs (or went away unnoticed: libmicrohttpd
/// 0.9.75's epoll can miss a close that comes with the last bytes) no longer locks its upload
/// until the connection timeout. A newer HEAD or PATCH of the upload stops it, keeps what it
/// received, and answers at once, as tusd does; an S3 part sent again stops the earlier one.
@Suite struct TakeoverTests {
    /// Two full buffers of the upload writer (256 KiB each): once the upload's file has this
    /// size, the server has consumed every byte sent.
    static let sent = 2 * 256 * 1024

    /// A tus PATCH of `bytes` that sends only the first `Self.sent` and then hangs, its
    /// connection left open; returns once the server has written them.
    static func hangingPatch(_ blobd: BlobdProcess, _ location: String, _ bytes: [UInt8]) throws -> RawConnection {
        let connection = try RawConnection(port: blobd.port)
        let head = "PATCH \(location) HTTP/1.1\r\nHost: 127.0.0.1\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: 0\r\n"
            + "Content-Type: application/offset+octet-stream\r\nContent-Length: \(bytes.count)\r\n\r\n"
        connection.send(Array(head.utf8) + Array(bytes[..<sent]))
        let file = blobd.dataDir + "/uploads/" + (location.split(separator: "/").last.map(String.init) ?? "")
        let written = eventually(within: 10) {
            ((try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0) == sent
        }
        #expect(written, "the server wrote the first bytes")
        return connection
    }

    @Test func headOfAnUploadWhoseClientHangsAnswersTheDurableOffsetAtOnce() throws {
        let blobd = try BlobdProcess()
        let tus = Tus(blobd: blobd)
        let bytes = testBytes(1_000_000, seed: 141)
        let location = try #require(try tus.create(length: bytes.count, metadata: ["key": "takeover/head"]).header("Location"))
        let hanging = try Self.hangingPatch(blobd, location, bytes)

        let started = Date()
        let head = try tus.head(location)
        #expect(Date().timeIntervalSince(started) < 1)
        #expect(head.status == 200)
        #expect(head.header("Upload-Offset") == String(Self.sent), "the bytes the hanging request delivered are kept")
        // The hanging request's connection is shut down by the server.
        let closed = Date()
        _ = hanging.receiveAll(timeout: 5)
        #expect(Date().timeIntervalSince(closed) < 2, "the old connection is closed, not left to the timeout")

        let rest = try tus.patch(location, offset: Self.sent, Array(bytes[Self.sent...]))
        #expect(rest.status == 204, "\(rest.text)")
        #expect(rest.header("Upload-Offset") == String(bytes.count))
        #expect(try curl([blobd.baseURL + "/v1/blobs/takeover/head"]).body == bytes)
        #expect(blobd.stop() == 0)
    }

    /// The case: each PATCH's client closes its connection right after its last bytes,
    /// a close libmicrohttpd's epoll misses; resuming at once still works.
    @Test func resumingRightAfterADroppedConnectionWorksAtOnce() throws {
        let blobd = try BlobdProcess()
        let tus = Tus(blobd: blobd)
        let mebibyte = 1 << 20
        let bytes = testBytes(3 * mebibyte, seed: 144)
        let location = try #require(try tus.create(length: bytes.count, metadata: ["key": "takeover/dropped"]).header("Location"))
        let file = blobd.dataDir + "/uploads/" + (location.split(separator: "/").last.map(String.init) ?? "")
        for round in 0..<2 {
            let offset = round * mebibyte
            let connection = try RawConnection(port: blobd.port)
            let head = "PATCH \(location) HTTP/1.1\r\nHost: 127.0.0.1\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: \(offset)\r\n"
                + "Content-Type: application/offset+octet-stream\r\nContent-Length: \(bytes.count - offset)\r\n\r\n"
            connection.send(Array(head.utf8) + Array(bytes[offset..<offset + mebibyte]))
            connection.hangUp()
            #expect(eventually(within: 10) {
                ((try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0) == offset + mebibyte
            })
            let started = Date()
            let resumed = try tus.head(location)
            #expect(Date().timeIntervalSince(started) < 1)
            #expect(resumed.status == 200)
            #expect(resumed.header("Upload-Offset") == String(offset + mebibyte), "round \(round)")
        }
        let last = try tus.patch(location, offset: 2 * mebibyte, Array(bytes[(2 * mebibyte)...]))
        #expect(last.status == 204, "\(last.text)")
        #expect(try curl([blobd.baseURL + "/v1/blobs/takeover/dropped"]).body == bytes)
        #expect(blobd.stop() == 0)
    }

    @Test func patchOfAnUploadWhoseClientHangsTakesItOver() throws {
        let blobd = try BlobdProcess()
        let tus = Tus(blobd: blobd)
        let bytes = testBytes(800_000, seed: 142)
        let location = try #require(try tus.create(length: bytes.count, metadata: ["key": "takeover/patch"]).header("Location"))
        let hanging = try Self.hangingPatch(blobd, location, bytes)

        let started = Date()
        let rest = try tus.patch(location, offset: Self.sent, Array(bytes[Self.sent...]))
        #expect(Date().timeIntervalSince(started) < 1)
        #expect(rest.status == 204, "not 423: \(rest.text)")
        #expect(try curl([blobd.baseURL + "/v1/blobs/takeover/patch"]).body == bytes)
        // The old request, still there, gets no say any more: its connection was shut down.
        hanging.send(Array(repeating: 0x41, count: 1000))
        #expect(try curl([blobd.baseURL + "/v1/blobs/takeover/patch"]).body == bytes)
        #expect(blobd.stop() == 0)
    }

    @Test func s3PartSentAgainStopsTheEarlierOne() throws {
        let blobd = try BlobdProcess(["--s3-listen", "127.0.0.1:0"])
        let s3 = "http://127.0.0.1:\(try #require(blobd.s3Port))"
        #expect(try curl(["-X", "PUT", s3 + "/parts"]).status == 200)
        let created = try curl(["-X", "POST", s3 + "/parts/object?uploads"])
        let upload = try #require(created.text.components(separatedBy: "<UploadId>").dropFirst().first?.components(separatedBy: "<").first)
        let part = testBytes(1_000_000, seed: 143)
        let hanging = try RawConnection(port: try #require(blobd.s3Port))
        hanging.send(Array("PUT /parts/object?partNumber=1&uploadId=\(upload) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(part.count)\r\n\r\n".utf8)
                     + Array(part[..<Self.sent]))
        let uploads = blobd.dataDir + "/uploads"
        func temporaryFiles() -> [String] { files(under: uploads).filter { $0.contains(".tmp.") } }
        #expect(eventually(within: 10) { temporaryFiles().count == 1 }, "the hanging part is being written")

        let dir = TempDir()
        let again = try curl(["-X", "PUT", "-T", dir.file("part", part), s3 + "/parts/object?partNumber=1&uploadId=\(upload)"])
        #expect(again.status == 200, "\(again.text)")
        #expect(temporaryFiles().isEmpty, "the earlier request's file is gone at once")
        let closed = Date()
        _ = hanging.receiveAll(timeout: 5)
        #expect(Date().timeIntervalSince(closed) < 2, "the earlier connection is closed, not left to the timeout")

        let etag = try #require(again.header("ETag"))
        let complete = "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>\(etag)</ETag></Part></CompleteMultipartUpload>"
        #expect(try curl(["-X", "POST", "--data-binary", complete, s3 + "/parts/object?uploadId=\(upload)"]).status == 200)
        #expect(try curl([s3 + "/parts/object"]).body == part)
        #expect(blobd.stop() == 0)
    }
}

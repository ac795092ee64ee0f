import MicroHTTPD
import Testing
@testable import BlobAPIv1
@testable import HTTPCore
@testable import Observability

/// Issue 20 items 7 and 18, below the end-to-end tests: CIDR matching, the forwarded chain,
/// text-log escaping and the framing checks that need no socket.
@Suite struct ProxyAndLogTextTests {
    @Test func networkRangesMatch() throws {
        let v4 = try #require(NetworkRange("10.0.0.0/8"))
        #expect(v4.contains([10, 200, 1, 1]))
        #expect(!v4.contains([11, 0, 0, 1]))
        #expect(v4.contains([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 10, 1, 2, 3]), "IPv4-mapped IPv6")
        let one = try #require(NetworkRange("127.0.0.1"))
        #expect(one.contains([127, 0, 0, 1]) && !one.contains([127, 0, 0, 2]))
        let v6 = try #require(NetworkRange("2001:db8::/33"))
        #expect(v6.contains(try #require(IPAddress.parse("2001:db8:7fff::1"))))
        #expect(!v6.contains(try #require(IPAddress.parse("2001:db8:8000::1"))))
        for bad in ["10.0.0.0/33", "10.0.0.0/", "10.0.0/8", "example.com", "::1/129", "10.0.0.0/+8"] {
            #expect(NetworkRange(bad) == nil, "\(bad)")
        }
    }

    @Test func forwardedChainIsReadLeftToRight() {
        let forwarded = HTTPRequestHead(method: "GET", path: [], headers: [
            ("Forwarded", #"for=192.0.2.60;proto=http;by=203.0.113.43, For="[2001:db8:cafe::17]:4711""#),
            ("Forwarded", "for=\"198.51.100.7:80\""),
            ("X-Forwarded-For", "6.6.6.6"),
        ])
        #expect(TrustedProxies.forwardedChain(forwarded) == ["192.0.2.60", "2001:db8:cafe::17", "198.51.100.7"])
        let xff = HTTPRequestHead(method: "GET", path: [], headers: [("X-Forwarded-For", "1.1.1.1 , 2.2.2.2"), ("x-forwarded-for", "3.3.3.3")])
        #expect(TrustedProxies.forwardedChain(xff) == ["1.1.1.1", "2.2.2.2", "3.3.3.3"])
        // No peer (a test head): "-", whatever the headers say.
        #expect(TrustedProxies([NetworkRange("0.0.0.0/0")].compactMap { $0 }).clientAddress(of: xff) == "-")
    }

    @Test func textLogValuesCannotForgeLinesOrFields() {
        func value(_ text: String) -> String {
            var out: [UInt8] = []
            LogText.appendValue(text, to: &out)
            return String(decoding: out, as: UTF8.self)
        }
        #expect(value("photos/a.jpg") == "photos/a.jpg")
        #expect(value("a\nb") == #""a\nb""#)
        #expect(value("x client.address=1.2.3.4") == #""x client.address=1.2.3.4""#)
        #expect(value("\u{1B}[31m\r\t\u{7F}\u{9B}\u{2028}") == #""\u{1b}[31m\r\t\u{7f}\u{9b}\u{2028}""#)
        #expect(value(#"q"\"#) == #""q\"\\""#)
        #expect(value("") == #""""#)
    }

    @Test func controlCharactersAndHTTP10ChunkedAreMalformed() {
        func check(_ head: HTTPRequestHead) -> HTTPError? {
            do throws(HTTPError) {
                try HTTPFraming.check(head)
                return nil
            } catch {
                return error
            }
        }
        let cr = HTTPRequestHead(method: "GET", path: Array("/healthz".utf8), headers: [("X-A", "a\rb")])
        #expect(check(cr) == .malformedMessage("A header field value holds a control character (a bare CR?)."))
        #expect(check(HTTPRequestHead(method: "GET", path: Array("/healthz".utf8), headers: [("X-A", "a\tb")])) == nil)
        let http10 = HTTPRequestHead(method: "PUT", path: Array("/v1/blobs/k".utf8), version: "HTTP/1.0",
                                     headers: [("Transfer-Encoding", "chunked")])
        #expect(check(http10) == .malformedMessage("Transfer-Encoding needs HTTP/1.1."))
        let loose = HTTPRequestHead(method: "GET", path: Array("/healthz".utf8), isStrictlyFramed: false)
        #expect(check(loose) != nil)
        #expect(check(HTTPRequestHead(method: "GET", path: Array("/a\u{1}b".utf8))) != nil)
    }
}

import BlobCore
import Foundation
import Testing

/// The S3 event message an outbox row carries: exact JSON, keys encoded as S3 encodes them,
/// times and sequencers.
@Suite struct EventPayloadTests {
    @Test func keysAreEncodedAsS3Does() {
        #expect(EventJSON.s3KeyEncoding("dir/a b+c%é.txt") == "dir/a+b%2Bc%25%C3%A9.txt")
        #expect(EventJSON.s3KeyEncoding("A-z_0.9*~:=") == "A-z_0.9*%7E%3A%3D")
        #expect(EventJSON.s3KeyEncoding("") == "")
    }

    @Test func timesAndSequencers() {
        #expect(EventJSON.isoTime(millis: 0) == "1970-01-01T00:00:00.000Z")
        #expect(EventJSON.isoTime(millis: 1_795_852_800_007) == "2026-11-28T08:00:00.007Z")
        #expect(EventJSON.isoTime(millis: 951_782_400_123) == "2000-02-29T00:00:00.123Z")
        #expect(EventJSON.isoTime(millis: -1) == "1969-12-31T23:59:59.999Z")
        #expect(EventJSON.sequencer(255) == "00000000000000FF")
        #expect(EventJSON.sequencer(1) < EventJSON.sequencer(16))
        #expect(EventJSON.string("a\"b\\c\n\u{1}é") == "\"a\\\"b\\\\c\\n\\u0001é\"")
    }

    @Test func payloadIsTheS3EventMessage() throws {
        let record = BlobRecord(key: try BlobKey("photos/a b.jpg"), version: "v1", size: 11, sha256: Array(repeating: 0xAB, count: 32),
                                contentType: "image/jpeg", modified: 0)
        let draft = EventDraft(name: "ObjectCreated:Put", targets: [EventTarget(target: "t", configurationID: "c")],
                               principal: "key:k", requestID: "R1", sourceIP: "10.0.0.1", dialect: "v1", node: "n1")
        let text = draft.payload(for: record, target: draft.targets[0], sequencer: 10, millis: 86_400_000)
        let sha = String(repeating: "ab", count: 32)
        #expect(text == #"{"Records":[{"eventVersion":"2.1","eventSource":"blobd:s3","awsRegion":"us-east-1","#
                + #""eventTime":"1970-01-02T00:00:00.000Z","eventName":"ObjectCreated:Put","userIdentity":{"principalId":"key:k"},"#
                + #""requestParameters":{"sourceIPAddress":"10.0.0.1"},"responseElements":{"x-amz-request-id":"R1","x-amz-id-2":"n1"},"#
                + #""s3":{"s3SchemaVersion":"1.0","configurationId":"c","bucket":{"name":"photos","ownerIdentity":{"principalId":"blobd"},"#
                + #""arn":"arn:aws:s3:::photos"},"object":{"key":"a+b.jpg","size":11,"eTag":"\#(sha)","sequencer":"000000000000000A"}},"#
                + #""blobd":{"sha256":"\#(sha)","dialect":"v1","node":"n1","version":"v1"}}]}"#)
        #expect(try JSONSerialization.jsonObject(with: Data(text.utf8)) is [String: Any])
        #expect(EventDraft.bucket(of: try BlobKey(String(repeating: "a", count: 64))) == nil, "a content address names no bucket")
    }

    /// SQLite keeps a message with an empty sequencer (its id is known only once inserted) and
    /// fills it in when the row is read: the same bytes as a message made with the id, even when
    /// the key or the principal spell the field.
    @Test func emptySequencerIsFilledIn() throws {
        let record = BlobRecord(key: try BlobKey(#"b/k "sequencer":"x"#), version: "v", size: 1, sha256: Array(repeating: 1, count: 32),
                                contentType: "text/plain", modified: 0)
        let draft = EventDraft(name: "ObjectCreated:Put", targets: [EventTarget(target: "t", configurationID: "c")],
                               principal: #""sequencer":""#, requestID: "R", sourceIP: "", dialect: "s3", node: "n")
        let blank = draft.payload(for: record, target: draft.targets[0], sequencer: nil, millis: 5)
        #expect(blank.contains(#""sequencer":""}"#))
        #expect(EventJSON.fillingSequencer(blank, with: 0x2A) == draft.payload(for: record, target: draft.targets[0], sequencer: 0x2A, millis: 5))
        #expect(EventJSON.fillingSequencer("{}", with: 1) == "{}")
    }

    /// The facts an outbox row packs come back exactly, whatever their text holds; text that
    /// is not what `packed` writes is refused.
    @Test func packedFactsComeBack() {
        let facts = EventFacts(name: "ObjectCreated:Put", principal: "key:12:ab", requestID: "", sourceIP: "::1", dialect: "v1",
                               node: "n\u{0}1", region: "ü-1", configurationID: "9:x\"\\", key: "bkt/k", size: UInt64(Int64.max) + 1,
                               eTag: "abc-3", sha256: [1, 2], version: "v", versioned: true, millis: 5)
        #expect(EventFacts(packed: facts.packed, name: facts.name, key: facts.key, sha256: facts.sha256, millis: 5) == facts)
        for bad in ["", "3:ab", "x:a", "1:a", facts.packed + "0:", "99999999999999999999:a", "-1:"] {
            #expect(EventFacts(packed: bad, name: "n", key: "k", sha256: [], millis: 0) == nil, "\(bad)")
        }
    }
}

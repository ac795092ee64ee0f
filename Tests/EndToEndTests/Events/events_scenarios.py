"""The scenarios of events_e2e.py; each takes the helpers module `h`."""
import hashlib, io, os, random, sys, threading, time
import botocore, requests
from tusclient import client as tus


def by_key(records):
    out = {}
    for _, record in records:
        out.setdefault(record["s3"]["object"]["key"], []).append(record)
    return out


def expect_record(h, record, name, key, body, etag, dialect, principal, configuration="all"):
    s3 = record["s3"]
    h.check(record["eventVersion"] == "2.1" and record["eventSource"] == "blobd:s3", "version and source: %r" % record)
    h.check(record["eventName"] == name, "eventName %s, expected %s" % (record["eventName"], name))
    h.check(s3["object"]["key"] == key, "key %s, expected %s" % (s3["object"]["key"], key))
    h.check(s3["configurationId"] == configuration, "configurationId %s" % s3["configurationId"])
    h.check(s3["bucket"]["arn"] == "arn:aws:s3:::" + s3["bucket"]["name"], "bucket arn")
    h.check(record["blobd"]["dialect"] == dialect, "dialect %s, expected %s" % (record["blobd"]["dialect"], dialect))
    h.check(record["blobd"]["sha256"] == hashlib.sha256(body).hexdigest(), "sha256 of %s" % key)
    h.check(record["userIdentity"]["principalId"].startswith(principal), "principal %s" % record["userIdentity"]["principalId"])
    h.check(len(s3["object"]["sequencer"]) == 16, "sequencer %s" % s3["object"]["sequencer"])
    if name.startswith("ObjectCreated"):
        h.check(s3["object"]["size"] == len(body), "size of %s: %s" % (key, s3["object"]["size"]))
        h.check(s3["object"]["eTag"] == etag, "eTag of %s: %s, expected %s" % (key, s3["object"]["eTag"], etag))
    else:
        h.check("size" not in s3["object"], "a removal has no size")


def operations(h):
    """Each operation of each dialect, with exact names, keys, sizes, eTags and digests."""
    rec = h.Receiver()
    rec.start()
    b = h.Blobd(rec).start()
    s3 = b.client()
    b.subscribe("evt", [{"id": "all", "target": "hook", "events": ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"]}])
    b.subscribe("flt", [{"id": "jpegs", "target": "hook", "events": ["s3:ObjectCreated:Put"], "prefix": "img/", "suffix": ".jpg"}])
    session = requests.Session()
    md5 = lambda body: hashlib.md5(body).hexdigest()
    shahex = lambda body: hashlib.sha256(body).hexdigest()
    # /v1 PUT, DELETE (and DELETE of nothing: no event), POST (content-addressed: no bucket, no event).
    put = b"a /v1 PUT"
    r = session.put(b.url + "/v1/blobs/evt/dir/a%20b%2Bc%25%C3%A9.txt", data=put, headers=b.headers())
    h.check(r.status_code == 201, "PUT: %d" % r.status_code)
    h.check(session.delete(b.url + "/v1/blobs/evt/dir/a%20b%2Bc%25%C3%A9.txt", headers=b.headers()).status_code == 204, "DELETE")
    h.check(session.delete(b.url + "/v1/blobs/evt/absent", headers=b.headers()).status_code == 404, "DELETE of nothing")
    h.check(session.post(b.url + "/v1/blobs", data=b"posted", headers=b.headers()).status_code in (200, 201), "POST")
    # tus: a finished upload is ObjectCreated:Post.
    data = os.urandom(200 * 1024)
    tus.TusClient(b.url + "/v1/uploads", headers=b.headers()).uploader(
        file_stream=io.BytesIO(data), chunk_size=64 * 1024, metadata={"key": "evt/tus/file.bin"}).upload()
    # S3: PutObject, CopyObject, CompleteMultipartUpload, DeleteObject, DeleteObjects.
    body = b"an S3 PutObject"
    s3.put_object(Bucket="evt", Key="s3/put me.txt", Body=body)
    s3.copy_object(Bucket="evt", Key="s3/copy.txt", CopySource={"Bucket": "evt", "Key": "s3/put me.txt"})
    part1, part2 = os.urandom(5 * 1024 * 1024), b"tail"
    upload = s3.create_multipart_upload(Bucket="evt", Key="s3/multi")["UploadId"]
    e1 = s3.upload_part(Bucket="evt", Key="s3/multi", UploadId=upload, PartNumber=1, Body=part1)["ETag"]
    e2 = s3.upload_part(Bucket="evt", Key="s3/multi", UploadId=upload, PartNumber=2, Body=part2)["ETag"]
    s3.complete_multipart_upload(Bucket="evt", Key="s3/multi", UploadId=upload, MultipartUpload={"Parts": [
        {"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    s3.delete_object(Bucket="evt", Key="s3/copy.txt")
    s3.delete_objects(Bucket="evt", Delete={"Objects": [{"Key": "s3/multi"}, {"Key": "s3/never"}]})
    # Filters: only img/*.jpg, only Put.
    for key in ["img/a.jpg", "img/a.png", "doc/a.jpg"]:
        session.put(b.url + "/v1/blobs/flt/" + key, data=key.encode(), headers=b.headers())
    session.delete(b.url + "/v1/blobs/flt/img/a.jpg", headers=b.headers())
    multi_etag = hashlib.md5(bytes.fromhex(md5(part1)) + bytes.fromhex(md5(part2))).hexdigest() + "-2"
    expected = [
        ("ObjectCreated:Put", "dir/a+b%2Bc%25%C3%A9.txt", put, shahex(put), "v1", "token:"),
        ("ObjectRemoved:Delete", "dir/a+b%2Bc%25%C3%A9.txt", put, None, "v1", "token:"),
        ("ObjectCreated:Post", "tus/file.bin", data, shahex(data), "tus", "token:"),
        ("ObjectCreated:Put", "s3/put+me.txt", body, md5(body), "s3", "s3:" + h.AKID),
        ("ObjectCreated:Copy", "s3/copy.txt", body, md5(body), "s3", "s3:" + h.AKID),
        ("ObjectCreated:CompleteMultipartUpload", "s3/multi", part1 + part2, multi_etag, "s3", "s3:" + h.AKID),
        ("ObjectRemoved:Delete", "s3/copy.txt", body, None, "s3", "s3:" + h.AKID),
        ("ObjectRemoved:Delete", "s3/multi", part1 + part2, None, "s3", "s3:" + h.AKID),
    ]
    records = rec.wait_for(len(expected) + 1)
    time.sleep(1)  # nothing more arrives
    records = rec.records()
    h.check(len(records) == len(expected) + 1, "%d events, expected %d: %r" % (len(records), len(expected) + 1,
                                                                            [r["eventName"] + " " + r["s3"]["object"]["key"] for _, r in records]))
    # Delivery keeps the order per key, not across keys: compare each key's events in turn.
    arrived = by_key([(i, r) for i, r in records if r["s3"]["bucket"]["name"] == "evt"])
    wanted = {}
    for item in expected:
        wanted.setdefault(item[1], []).append(item)
    h.check(sorted(arrived) == sorted(wanted), "keys with events: %r" % sorted(arrived))
    for key, items in wanted.items():
        h.check(len(arrived[key]) == len(items), "%s: %d events, expected %d" % (key, len(arrived[key]), len(items)))
        for record, (name, key, content, etag, dialect, principal) in zip(arrived[key], items):
            expect_record(h, record, name, key, content, etag, dialect, principal)
    flt = [r for _, r in records if r["s3"]["bucket"]["name"] == "flt"]
    h.check(len(flt) == 1, "filters: %d events" % len(flt))
    expect_record(h, flt[0], "ObjectCreated:Put", "img/a.jpg", b"img/a.jpg", shahex(b"img/a.jpg"), "v1", "token:", "jpegs")
    notification_apis(h, b, s3)
    queue_api(h, b, rec)
    h.stop_all(b, rec)


def notification_apis(h, b, s3):
    """S3's Put/GetBucketNotificationConfiguration and the refusals, /v1's refusals."""
    s3.create_bucket(Bucket="cfg")
    queue = {"Id": "logs", "QueueArn": "arn:blobd:sqs::hook:webhook", "Events": ["s3:ObjectCreated:*", "s3:ObjectRemoved:Delete"],
             "Filter": {"Key": {"FilterRules": [{"Name": "Prefix", "Value": "logs/"}, {"Name": "Suffix", "Value": ".gz"}]}}}
    s3.put_bucket_notification_configuration(Bucket="cfg", NotificationConfiguration={"QueueConfigurations": [queue]})
    got = s3.get_bucket_notification_configuration(Bucket="cfg")["QueueConfigurations"]
    h.check(len(got) == 1 and got[0]["Id"] == "logs" and got[0]["QueueArn"] == queue["QueueArn"]
            and got[0]["Events"] == queue["Events"], "GetBucketNotificationConfiguration: %r" % got)
    rules = sorted((r["Name"].lower(), r["Value"]) for r in got[0]["Filter"]["Key"]["FilterRules"])
    h.check(rules == [("prefix", "logs/"), ("suffix", ".gz")], "filter rules: %r" % rules)
    v1 = requests.get(b.url + "/v1/admin/buckets/cfg/notifications", headers=b.headers())
    h.check(v1.status_code == 200 and v1.json() == {"subscriptions": [{"id": "logs", "target": "hook", "events": queue["Events"],
                                                                      "prefix": "logs/", "suffix": ".gz"}]}, "/v1 GET: %s" % v1.text)

    def error(call):
        try:
            call()
        except botocore.exceptions.ClientError as e:
            return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"], e.response["Error"].get("Message", "")
        return None
    unknown = dict(queue, QueueArn="arn:blobd:sqs::nope:webhook")
    status, code, message = error(lambda: s3.put_bucket_notification_configuration(
        Bucket="cfg", NotificationConfiguration={"QueueConfigurations": [unknown]}))
    h.check((status, code) == (400, "InvalidArgument") and "Unable to validate the following destination configurations" in message,
            "unknown target: %s %s %s" % (status, code, message))
    topic = {"TopicConfigurations": [{"TopicArn": "arn:aws:sns:us-east-1:1:t", "Events": ["s3:ObjectCreated:*"]}]}
    status, code, message = error(lambda: s3.put_bucket_notification_configuration(Bucket="cfg", NotificationConfiguration=topic))
    h.check((status, code) == (501, "NotImplemented") and "TopicConfiguration" in message, "topic: %s %s %s" % (status, code, message))
    bad = requests.put(b.url + "/v1/admin/buckets/cfg/notifications", headers=b.headers(),
                       json={"subscriptions": [{"target": "nope", "events": ["s3:ObjectCreated:*"]}]})
    h.check(bad.status_code == 400, "/v1 unknown target: %d" % bad.status_code)
    h.check(requests.get(b.url + "/v1/admin/buckets/cfg/notifications").status_code == 401, "no token: 401")
    h.check(requests.delete(b.url + "/v1/admin/buckets/cfg/notifications", headers=b.headers()).status_code == 204, "DELETE")
    gone = requests.get(b.url + "/v1/admin/buckets/cfg/notifications", headers=b.headers())
    h.check(gone.status_code == 404 and "setting-not-found" in gone.text, "GET after DELETE: %d %s" % (gone.status_code, gone.text))
    h.check(requests.get(b.url + "/v1/admin/buckets/nobucket/notifications", headers=b.headers()).status_code == 404, "no bucket")


def queue_api(h, b, rec):
    """GET /v1/admin/events shows what waits while the receiver is down; /metrics counts it."""
    rec.stop()
    for i in range(3):
        requests.put(b.url + "/v1/blobs/evt/queued/%d" % i, data=b"q", headers=b.headers())
    queue = requests.get(b.url + "/v1/admin/events?limit=2", headers=b.headers()).json()
    h.check(queue["pending"] == 3 and len(queue["events"]) == 2 and queue["next"] is not None, "queue: %r" % queue)
    first = queue["events"][0]
    h.check(set(first) == {"id", "target", "bucket", "key", "event", "attempts", "next_attempt", "created"}, "fields: %r" % first)
    h.check(first["key"] == "evt/queued/0" and first["event"] == "ObjectCreated:Put" and first["target"] == "hook", "first: %r" % first)
    rest = requests.get(b.url + "/v1/admin/events?after=" + queue["next"], headers=b.headers()).json()
    h.check([e["key"] for e in rest["events"]] == ["evt/queued/2"] and rest["next"] is None, "second page: %r" % rest)
    time.sleep(1.5)
    metrics = requests.get(b.url + "/metrics").text
    h.check('blobd_events_pending{target="hook"} 3' in metrics, "pending in /metrics")
    h.check('blobd_event_delivery_failures_total{target="hook"} 0' not in metrics, "failures counted")
    rec.start()
    rec.wait_for(len(rec.records()) + 3, timeout=30)


def mixed_writes(h, b, keys, count, acknowledged, attempted, stop_at=None, on_step=None):
    """`count` PUTs and DELETEs on `keys` in order, recording what was attempted and acknowledged."""
    session = requests.Session()
    for i in range(count):
        if on_step:
            on_step(i)
        key = random.choice(keys)
        try:
            if random.random() < 0.75:
                body = os.urandom(random.randint(0, 48)) + b"#%d" % i
                attempted.setdefault(key, []).append(("ObjectCreated:Put", hashlib.sha256(body).hexdigest()))
                r = session.put(b.url + "/v1/blobs/mix/" + key, data=body, headers=b.headers(), timeout=10)
                if r.status_code in (200, 201):
                    acknowledged.setdefault(key, []).append(("ObjectCreated:Put", hashlib.sha256(body).hexdigest()))
            else:
                attempted.setdefault(key, []).append(("ObjectRemoved:Delete", None))
                r = session.delete(b.url + "/v1/blobs/mix/" + key, headers=b.headers(), timeout=10)
                if r.status_code == 204:
                    acknowledged.setdefault(key, []).append(("ObjectRemoved:Delete", None))
        except requests.RequestException:
            return i
    return count


def is_subsequence(small, big, same):
    position = 0
    for item in small:
        while position < len(big) and not same(item, big[position]):
            position += 1
        if position == len(big):
            return False
        position += 1
    return True


def verify_delivered(h, rec, acknowledged, attempted, exact):
    """Every acknowledged write has its event, in order per key; no event names a change not attempted."""
    expected = sum(len(v) for v in acknowledged.values())
    records = rec.wait_for(expected, timeout=90)
    time.sleep(1)
    events = by_key(rec.records())
    same = lambda want, record: want[0] == record["eventName"] and (want[1] is None or want[1] == record["blobd"]["sha256"])
    for key in set(acknowledged) | set(events):
        got = events.get(key, [])
        sequencers = [r["s3"]["object"]["sequencer"] for r in got]
        h.check(sequencers == sorted(sequencers) and len(set(sequencers)) == len(sequencers), "out of order for %s: %r" % (key, sequencers))
        h.check(is_subsequence(acknowledged.get(key, []), got, same), "an acknowledged write of %s has no event" % key)
        h.check(is_subsequence(got, attempted.get(key, []), lambda r, want: same(want, r)), "an event of %s names no attempted change" % key)
        if exact:
            h.check(len(got) == len(acknowledged.get(key, [])), "%s: %d events for %d writes" % (key, len(got), len(acknowledged.get(key, []))))
    return sum(len(v) for v in events.values())


def final_state_matches(h, b, rec, keys):
    """The last event of each key tells its state: created → that content, removed (or none) → absent."""
    events = by_key(rec.records())
    for key in keys:
        r = requests.get(b.url + "/v1/blobs/mix/" + key, headers=b.headers())
        last = events.get(key, [None])[-1]
        if last is None or last["eventName"] == "ObjectRemoved:Delete":
            h.check(r.status_code == 404, "%s: %d, but its last event is %r" % (key, r.status_code, last and last["eventName"]))
        else:
            h.check(r.status_code == 200 and hashlib.sha256(r.content).hexdigest() == last["blobd"]["sha256"], "%s differs from its last event" % key)


def receiver_down(h):
    """500 mixed writes with the receiver stopped in the middle: every one arrives, in order per key."""
    rec = h.Receiver()
    rec.start()
    b = h.Blobd(rec).start()
    b.subscribe("mix", [{"id": "all", "target": "hook", "events": ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"]}])
    keys = ["k%02d" % i for i in range(40)]
    acknowledged, attempted = {}, {}

    def step(i):
        if i == 120:
            rec.stop()
        if i == 380:
            rec.start()
    mixed_writes(h, b, keys, 500, acknowledged, attempted, on_step=step)
    verify_delivered(h, rec, acknowledged, attempted, exact=True)
    h.stop_all(b, rec)


def kill9(h):
    """kill -9 blobd in the middle of 500 mixed writes (4 writers), restart: every acknowledged write arrives."""
    rec = h.Receiver()
    rec.start(fail_every=7)  # some deliveries are refused, so some events wait across the crash
    b = h.Blobd(rec).start()
    b.subscribe("mix", [{"id": "all", "target": "hook", "events": ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"]}])
    acknowledged, attempted = {}, {}
    writers = [["w%d-%02d" % (w, i) for i in range(10)] for w in range(4)]
    threads = [threading.Thread(target=mixed_writes, args=(h, b, keys, 125, acknowledged, attempted)) for keys in writers]
    for thread in threads:
        thread.start()
    time.sleep(1.0)
    b.kill()
    for thread in threads:
        thread.join()
    b.start()
    threads = [threading.Thread(target=mixed_writes, args=(h, b, keys, 60, acknowledged, attempted)) for keys in writers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    h.check(sum(len(v) for v in acknowledged.values()) > 250, "enough writes were acknowledged")
    verify_delivered(h, rec, acknowledged, attempted, exact=False)
    final_state_matches(h, b, rec, [k for keys in writers for k in keys])
    h.stop_all(b, rec)


def crash_steps(h):
    """kill -9 at each step of a commit (PUT and tus) and of a delivery; after recovery every
    acknowledged write has its event, and no event names a change that did not happen."""
    rec = h.Receiver()
    rec.start()
    b = h.Blobd(rec).start()
    b.subscribe("crs", [{"id": "all", "target": "hook", "events": ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"]}])
    b.stop()
    for step in ["before-link", "after-link", "after-commit"]:
        for kind in ["put", "tus"]:
            b.start(env={"BLOBD_TEST_CRASH_AT": step})
            key = "crs/%s/%s" % (step, kind)
            body = os.urandom(1000)
            before = len(rec.records())
            try:
                if kind == "put":
                    requests.put(b.url + "/v1/blobs/" + key, data=body, headers=b.headers(), timeout=10)
                else:
                    tus.TusClient(b.url + "/v1/uploads", headers=b.headers()).uploader(
                        file_stream=io.BytesIO(body), chunk_size=4096, metadata={"key": key}).upload()
            except Exception:
                pass
            h.check(b.wait_exit() == -9, "blobd was killed at %s" % step)
            b.start()
            stored = requests.get(b.url + "/v1/blobs/" + key, headers=b.headers()).status_code == 200
            h.check(stored == (step == "after-commit"), "%s %s: stored %s" % (step, kind, stored))
            if stored:
                rec.wait_for(before + 1, timeout=20)
            time.sleep(0.5)
            mine = [r for _, r in rec.records() if r["s3"]["object"]["key"] == key.split("/", 1)[1]]
            h.check(len(mine) == (1 if stored else 0), "%s %s: %d events, stored %s" % (step, kind, len(mine), stored))
            if stored:
                h.check(mine[0]["blobd"]["sha256"] == hashlib.sha256(body).hexdigest(), "the event names the stored bytes")
            b.stop()
    for step in ["after-claim", "after-send"]:
        b.start(env={"BLOBD_TEST_EVENT_CRASH_AT": step})
        key = "crs/delivery/" + step
        before = len(rec.deliveries())
        try:  # the kill may come before the answer
            requests.put(b.url + "/v1/blobs/" + key, data=step.encode(), headers=b.headers(), timeout=10)
        except requests.RequestException:
            pass
        h.check(b.wait_exit() == -9, "blobd was killed at %s" % step)
        b.start()
        h.check(requests.get(b.url + "/v1/blobs/" + key, headers=b.headers()).status_code == 200, "%s: stored" % step)
        want = 2 if step == "after-send" else 1
        deadline = time.time() + 20
        while time.time() < deadline and len(rec.deliveries()) - before < want:
            time.sleep(0.1)
        time.sleep(0.5)
        ids = [d["id"] for d in rec.deliveries()[before:]]
        h.check(len(set(ids)) == 1 and len(ids) == want, "%s: delivered %r, expected one event %d times" % (step, ids, want))
        b.stop()
    h.stop_all(b, rec)


def cluster(h):
    """Two nodes on PostgreSQL; kill -9 one: the other delivers its events."""
    rec = h.Receiver()
    rec.start()
    shared = os.path.join(h.WORK, "shared")
    index = ["--index", os.environ["PG_URL"]]
    a = h.Blobd(rec, data_dir=shared, extra=index + ["--node-id", "a"], env={"BLOBD_TEST_EVENT_LEASE": "2"}).start()
    b = h.Blobd(rec, data_dir=shared, extra=index + ["--node-id", "b"]).start()
    a.subscribe("cls", [{"id": "all", "target": "hook", "events": ["s3:ObjectCreated:*"]}])
    time.sleep(1.5)  # b follows the subscription within a second
    rec.stop()
    written = []
    for i in range(40):
        node = a if i % 2 == 0 else b
        key = "k%d" % i
        h.check(requests.put(node.url + "/v1/blobs/cls/" + key, data=b"%d" % i, headers=node.headers()).status_code == 201, "PUT")
        written.append((key, "a" if node is a else "b"))
    time.sleep(1)
    a.kill()
    rec.start()
    records = rec.wait_for(40, timeout=60)
    got = {r["s3"]["object"]["key"]: r["blobd"]["node"] for _, r in records}
    h.check(got == dict(written), "every node's events arrive: %r" % got)
    metrics = requests.get(b.url + "/metrics").text
    delivered = [line for line in metrics.splitlines() if line.startswith("blobd_event_deliveries_total")]
    h.check(delivered and int(delivered[0].rsplit(" ", 1)[1]) >= 20, "b delivered a's events: %r" % delivered)
    h.stop_all(a, b, rec)


def retention(h):
    """A receiver that stays away: attempts back off, then past --notify-retention the event is
    dropped with a warning and counted; it is never sent afterwards."""
    rec = h.Receiver()
    b = h.Blobd(rec, extra=["--notify-retention", "3"]).start()
    b.subscribe("ret", [{"id": "all", "target": "hook", "events": ["s3:ObjectCreated:*"]}])
    h.check(requests.put(b.url + "/v1/blobs/ret/k", data=b"x", headers=b.headers()).status_code == 201, "PUT")
    time.sleep(1.8)
    queue = requests.get(b.url + "/v1/admin/events", headers=b.headers()).json()
    h.check(queue["pending"] == 1 and queue["events"][0]["attempts"] >= 3, "attempts back off: %r" % queue)
    deadline = time.time() + 15
    while time.time() < deadline and requests.get(b.url + "/v1/admin/events", headers=b.headers()).json()["pending"]:
        time.sleep(0.2)
    metrics = requests.get(b.url + "/metrics").text
    h.check('blobd_events_dropped_total{target="hook"} 1' in metrics, "dropped in /metrics")
    h.check("not delivered within --notify-retention; dropped" in open(b.log).read(), "a warning is logged")
    rec.start()
    time.sleep(1.5)
    h.check(rec.records() == [], "a dropped event is never sent")
    h.stop_all(b, rec)


def lifecycle(h):
    """A blob past its deadline, removed by the expiry sweep, gets its LifecycleExpiration:Delete
    event (written in the sweep's transaction), after its ObjectCreated:Put; a subscription
    without LifecycleExpiration gets none."""
    rec = h.Receiver()
    rec.start()
    b = h.Blobd(rec).start()
    b.subscribe("exp", [{"id": "all", "target": "hook", "events": ["s3:ObjectCreated:*", "s3:LifecycleExpiration:*"]}])
    b.subscribe("quiet", [{"id": "all", "target": "hook", "events": ["s3:ObjectRemoved:*"]}])
    body = b"short-lived"
    for bucket in ["exp", "quiet"]:
        r = requests.put(b.url + "/v1/blobs/%s/short%%20one?ttl=1s" % bucket, data=body, headers=b.headers())
        h.check(r.status_code == 201, "PUT with ttl: %d" % r.status_code)
    records = rec.wait_for(2, timeout=30)
    time.sleep(3)  # the sweep runs every 2 s; nothing more arrives
    records = rec.records()
    names = [(r["s3"]["bucket"]["name"], r["eventName"], r["s3"]["object"]["key"]) for _, r in records]
    h.check(names == [("exp", "ObjectCreated:Put", "short+one"), ("exp", "LifecycleExpiration:Delete", "short+one")],
            "events: %r" % names)
    expired = records[1][1]
    h.check(expired["blobd"]["dialect"] == "lifecycle" and expired["userIdentity"]["principalId"] == "blobd"
            and expired["blobd"]["sha256"] == hashlib.sha256(body).hexdigest(), "the expiration's record: %r" % expired)
    h.check(int(expired["s3"]["object"]["sequencer"], 16) > int(records[0][1]["s3"]["object"]["sequencer"], 16),
            "the sequencer grows per key")
    h.check(requests.get(b.url + "/v1/blobs/exp/short%20one", headers=b.headers()).status_code == 404, "expired")
    h.stop_all(b, rec)


from events_versions import versions  # noqa: E402,F401  (one more scenario, in a module of its own)

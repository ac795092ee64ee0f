"""The versions scenario of events_e2e.py (issue 25 with events): versioned writes name their
version, a delete marker is ObjectRemoved:DeleteMarkerCreated, removing a version by id is
ObjectRemoved:Delete naming it, and the expiry sweep in a versioned bucket leaves a delete marker
(LifecycleExpiration:DeleteMarkerCreated) and keeps the expired version."""
import time
import requests


def versions(h):
    rec = h.Receiver()
    rec.start()
    b = h.Blobd(rec).start()
    s3 = b.client()
    b.subscribe("ver", [{"id": "all", "target": "hook",
                         "events": ["s3:ObjectCreated:*", "s3:ObjectRemoved:*", "s3:LifecycleExpiration:*"]}])
    s3.put_bucket_versioning(Bucket="ver", VersioningConfiguration={"Status": "Enabled"})
    time.sleep(0.2)
    first = s3.put_object(Bucket="ver", Key="k", Body=b"first")["VersionId"]
    marker = s3.delete_object(Bucket="ver", Key="k")
    h.check(marker["DeleteMarker"] is True, "a delete marker: %r" % marker)
    s3.delete_object(Bucket="ver", Key="k", VersionId=first)
    r = requests.put(b.url + "/v1/blobs/ver/short?ttl=1s", data=b"short-lived", headers=b.headers())
    h.check(r.status_code == 201, "PUT with ttl: %d" % r.status_code)
    short = r.headers["Blob-Version"]
    records = rec.wait_for(5, timeout=30)
    time.sleep(3)  # the sweep runs every 2 s; nothing more arrives
    records = rec.records()
    seen = [(r["eventName"], r["s3"]["object"]["key"], r["s3"]["object"].get("versionId")) for _, r in records]
    # In order per key (keys are delivered independently).
    expired = [x for x in seen if x[0] == "LifecycleExpiration:DeleteMarkerCreated"]
    h.check(len(records) == 5 and [x for x in seen if x[1] == "k"] == [
        ("ObjectCreated:Put", "k", first), ("ObjectRemoved:DeleteMarkerCreated", "k", marker["VersionId"]),
        ("ObjectRemoved:Delete", "k", first)], "events of k: %r" % seen)
    h.check([x for x in seen if x[1] == "short"][:1] == [("ObjectCreated:Put", "short", short)] and len(expired) == 1
            and expired[0][2] not in (None, short), "events of short: %r" % seen)
    listed = s3.list_object_versions(Bucket="ver", Prefix="short")
    kept = [(v["VersionId"], v["IsLatest"]) for v in listed.get("Versions", [])]
    markers = [(m["VersionId"], m["IsLatest"]) for m in listed.get("DeleteMarkers", [])]
    h.check(kept == [(short, False)] and markers == [(expired[0][2], True)], "after the sweep: %r %r" % (kept, markers))
    h.check(s3.get_object(Bucket="ver", Key="short", VersionId=short)["Body"].read() == b"short-lived",
            "the expired version stays readable by its id")
    h.check(requests.get(b.url + "/v1/blobs/ver/short", headers=b.headers()).status_code == 404, "expired")
    h.stop_all(b, rec)

"""End-to-end scenarios of blobd's events (issue 23), run by EventTests.swift:
  events_e2e.py SCENARIO   with BLOBD_BIN (the built blobd) and, for the cluster, PG_URL.
Each launches the real blobd and a webhook receiver (receiver.py, which verifies every
signature with `standardwebhooks`), asserts, and exits non-zero with the reason on a difference."""
import base64, hashlib, json, os, random, shutil, signal, socket, subprocess, sys, tempfile, time
import boto3, requests
from botocore.config import Config

HERE = os.path.dirname(os.path.abspath(__file__))
BLOBD = os.environ.get("BLOBD_BIN", "blobd")
SECRET = "whsec_" + base64.b64encode(b"blobd-events-test-secret-0123").decode()
TOKEN = "events-test-token-0123456789"
AKID, SKEY = "AKIDEVENTS0000000001", "events-secret-key-0123456789"
WORK = tempfile.mkdtemp(prefix="blobd-events-")
# Every process a scenario starts, killed by PID when it fails, so that none outlives the test.
CHILDREN = []


def spawn(*args, **kwargs):
    process = subprocess.Popen(*args, **kwargs)
    CHILDREN.append(process)
    return process


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    for process in CHILDREN:
        if process.poll() is None:
            process.kill()
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Receiver:
    def __init__(self):
        self.port, self.log, self.process = free_port(), os.path.join(WORK, "events.jsonl"), None

    def start(self, fail_every=0):
        args = ["python3", os.path.join(HERE, "receiver.py"), str(self.port), SECRET, self.log] + ([str(fail_every)] if fail_every else [])
        self.process = spawn(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        check(self.process.stdout.readline().strip() == b"ready", "the receiver did not start")

    def stop(self):
        if self.process:
            self.process.kill()
            self.process.wait()
            self.process = None

    def deliveries(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            lines = [json.loads(line) for line in f if line.strip()]
        for line in lines:
            check(line["ok"], "a delivery's signature does not verify: %s" % line["id"])
        return lines

    def records(self):
        """(webhook-id, record) of every distinct event, in order of first arrival."""
        seen, out = set(), []
        for line in self.deliveries():
            if line["id"] in seen:
                continue
            seen.add(line["id"])
            out.append((line["id"], json.loads(line["payload"])["Records"][0]))
        return out

    def wait_for(self, count, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if len(self.records()) >= count:
                return self.records()
            time.sleep(0.1)
        fail("expected %d events, %d arrived: %r" % (count, len(self.records()),
                                                     [(i, r["eventName"], r["s3"]["object"]["key"]) for i, r in self.records()]))


class Blobd:
    def __init__(self, receiver, data_dir=None, extra=(), env=None, tokens=True):
        self.data_dir = data_dir or os.path.join(WORK, "data")
        self.receiver, self.extra, self.env, self.tokens = receiver, list(extra), dict(env or {}), tokens
        self.process = None

    def start(self, env=None):
        args = [BLOBD, "--data-dir", self.data_dir, "--listen", "127.0.0.1:0", "--s3-listen", "127.0.0.1:0",
                "--notify-webhook", "hook=http://127.0.0.1:%d/events" % self.receiver.port, "--notify-secret", "hook=" + SECRET]
        if self.tokens:
            path = os.path.join(WORK, "tokens")
            with open(path, "w") as f:
                f.write("%s read,write,delete,admin\ns3 %s %s read,write,delete,admin\n" % (TOKEN, AKID, SKEY))
            os.chmod(path, 0o600)
            args += ["--tokens-file", path]
        environment = {k: v for k, v in os.environ.items() if not k.startswith("BLOBD_")}
        environment.update({"BLOBD_TEST_EVENT_BACKOFF": "0.2"})
        environment.update(self.env)
        environment.update(env or {})
        self.log = os.path.join(WORK, "blobd-%d.log" % time.time_ns())
        self.process = spawn(args + self.extra, stdout=subprocess.DEVNULL, stderr=open(self.log, "w"), env=environment)
        deadline = time.time() + 30
        self.url = self.s3 = None
        while time.time() < deadline and (self.url is None or self.s3 is None):
            text = open(self.log).read()
            for line in text.splitlines():
                if "blobd listening on http://" in line:
                    self.url = "http://" + line.split("http://")[1].split()[0].rstrip("/")
                if "blobd S3 listening on http://" in line:
                    self.s3 = "http://" + line.split("http://")[1].split()[0].rstrip("/")
            if self.process.poll() is not None:
                fail("blobd exited at start: " + text)
            time.sleep(0.02)
        check(self.url and self.s3, "blobd did not announce its listeners")
        return self

    def kill(self):
        self.process.kill()
        self.process.wait()

    def wait_exit(self, timeout=30):
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            fail("blobd did not exit")

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(30)

    def headers(self, extra=None):
        h = {"Authorization": "Bearer " + TOKEN} if self.tokens else {}
        h.update(extra or {})
        return h

    def client(self):
        return boto3.client("s3", endpoint_url=self.s3, region_name="us-east-1", aws_access_key_id=AKID,
                            aws_secret_access_key=SKEY, config=Config(signature_version="s3v4", retries={"max_attempts": 1}))

    def subscribe(self, bucket, subscriptions):
        try:
            self.client().create_bucket(Bucket=bucket)
        except Exception as e:
            if "BucketAlreadyOwnedByYou" not in str(e):
                fail("CreateBucket %s: %s" % (bucket, e))
        r = requests.put("%s/v1/admin/buckets/%s/notifications" % (self.url, bucket), json={"subscriptions": subscriptions},
                         headers=self.headers())
        check(r.status_code == 200, "subscribe: %d %s" % (r.status_code, r.text))


def sha(body):
    return hashlib.sha256(body).hexdigest()


def stop_all(*things):
    for thing in things:
        thing.stop() if thing else None
    shutil.rmtree(WORK, ignore_errors=True)


sys.path.insert(0, HERE)
import events_scenarios  # noqa: E402  (the scenarios, below this module's helpers)

if __name__ == "__main__":
    scenario = getattr(events_scenarios, sys.argv[1].replace("-", "_"))
    try:
        scenario(sys.modules[__name__])
    finally:
        for child in CHILDREN:
            if child.poll() is None:
                child.kill()
    print("ok")

#!/usr/bin/env python3
"""Events benchmark: small PUTs into a bucket with one event subscription, against one without.

Run by `make bench-events`, never by `make test`. Two blobd processes on 127.0.0.1, each on its
own data directory and each with the same --notify-webhook target (a small receiver on this host
that answers 204), run in turn (A,B,A,B,...; medians). The receiver stands for another host, which
would take none of blobd's CPU: it runs in Linux's idle scheduling class (chrt --idle), so that
it gets only the CPU this host leaves (at nice 10 it still took CPU from blobd's requests):
  none  the bucket has no subscription: a PUT writes nothing more
  one   the bucket has one subscription for s3:ObjectCreated:*: every PUT writes its event row in
        its commit's transaction, and the node's delivery loop sends it meanwhile (its lag, the
        time from the end of a run until every event was delivered, is reported too)
Both with their access log off (--log-level warning). wrk, 4 KiB bodies, 16 connections, as
bench/run does. Report: bench/results/events.md, with the one/none ratio (goal 0.9). Every
process is stopped by PID; every wait is bounded, and the whole run by --time-budget.
"""

import argparse, json, os, statistics, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import harness  # noqa: E402
from harness import BenchError, Blobd, left, logger, run, wrk  # noqa: E402

GOAL = 0.9
log = logger("events")

RECEIVER = """
import asyncio, sys
# HTTP/1.1 with keep-alive, framed by Content-Length: what a webhook endpoint on another host
# would do, in as little of this host's CPU as Python allows (http.server costs several times more).
class Receiver(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport, self.buffer = transport, b""
    def data_received(self, data):
        self.buffer += data
        while True:
            end = self.buffer.find(b"\\r\\n\\r\\n")
            if end < 0:
                return
            length = 0
            for line in self.buffer[:end].split(b"\\r\\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if len(self.buffer) < end + 4 + length:
                return
            self.buffer = self.buffer[end + 4 + length:]
            self.transport.write(b"HTTP/1.1 204 No Content\\r\\nContent-Length: 0\\r\\n\\r\\n")
async def main():
    server = await asyncio.get_running_loop().create_server(Receiver, "127.0.0.1", int(sys.argv[1]))
    await server.serve_forever()
asyncio.run(main())
"""


def bootstrap_file(path, subscribed):
    bucket = {"name": "bench"}
    if subscribed:
        bucket["notifications"] = {"subscriptions": [{"id": "all", "target": "hook", "events": ["s3:ObjectCreated:*"]}]}
    with open(path, "w") as f:
        json.dump({"buckets": [bucket], "anonymous": ["read", "write", "admin"]}, f)


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blobd", default=os.environ.get("BLOBD_BIN", os.path.join(REPO, ".build/release/blobd")))
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--duration", type=int, default=6)
    ap.add_argument("--time-budget", type=int, default=400)
    ap.add_argument("--tmpdir", default=os.environ.get("TMPDIR", "/tmp"))
    ap.add_argument("--out", default=os.path.join(HERE, "results", "events.md"))
    args = ap.parse_args()
    harness.set_budget(args.time_budget)
    work = run(["mktemp", "-d", os.path.join(args.tmpdir, "blobd-events.XXXXXX")], check=True).stdout.strip()
    port = free_port()
    # In the idle class: a receiver is another host's work, not blobd's.
    receiver = subprocess.Popen(["chrt", "--idle", "0", sys.executable, "-c", RECEIVER, str(port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    hook = ["--notify-webhook", f"hook=http://127.0.0.1:{port}/"]
    servers = []
    for name in ("none", "one"):
        path = os.path.join(work, name + ".json")
        bootstrap_file(path, name == "one")
        servers.append(Blobd(name, args.blobd, work, hook + ["--bootstrap", path]))
    samples, lags = {}, {}
    try:
        for s in servers:
            s.start()
            # A first run of each, not counted: the first seconds of a new server are slower.
            wrk(args, "put_small.lua", f"http://127.0.0.1:{s.port}/", 16, [], ("bench/warm", 4096))
        for r in range(args.rounds):
            for s in (servers if r % 2 == 0 else servers[::-1]):
                put = wrk(args, "put_small.lua", f"http://127.0.0.1:{s.port}/", 16, [], (f"bench/r{r}", 4096))
                samples.setdefault(s.name, []).append(put)
                log(f"round {r + 1} {s.name}: PUT {put:,.0f}/s")
                # The delivery loop catches up before the next run, so runs do not overlap.
                started = time.monotonic()
                deadline = started + left(60)
                while time.monotonic() < deadline:
                    queue = run(["curl", "-s", f"http://127.0.0.1:{s.port}/v1/admin/events?limit=1"], want=10).stdout
                    if '"pending":0' in queue:
                        break
                    time.sleep(0.1)
                lags.setdefault(s.name, []).append(time.monotonic() - started)
    finally:
        for s in servers:
            s.stop()
        harness.stop(receiver)
        try:
            run(["rm", "-rf", work], want=120)
        except BenchError as error:  # a slow disk: the numbers still count
            log(f"could not remove {work}: {error}")
    none, one = statistics.median(samples["none"]), statistics.median(samples["one"])
    lines = ["# Events: small PUTs with one subscription vs none", "",
             f"{time.strftime('%Y-%m-%d %H:%M')}, {args.rounds} rounds of {args.duration} s, medians (requests/s); "
             "the receiver is on the same host, in the idle scheduling class; so is blobd's delivery loop.", "",
             "| workload | none | one subscription | one/none | goal |", "|---|---|---|---|---|",
             f"| 4 KiB PUT, 16 connections | {none:,.0f} | {one:,.0f} | {one / none:.2f} | ≥ {GOAL} {'ok' if one / none >= GOAL else 'MISS'} |"]
    lines += ["", "Each run (requests/s): " + "; ".join(f"{name} " + ", ".join(f"{v:,.0f}" for v in samples[name])
                                                 for name in ("none", "one")) + "."]
    lines += ["", "Delivery lag after each run with one subscription (s until no event was pending): "
              + ", ".join(f"{v:.1f}" for v in lags["one"]) + "."]
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    harness.interrupt_on_signals()
    main()

#!/usr/bin/env python3
"""Events benchmark: small PUTs into a bucket with one event subscription, against a bucket without.

Run by `make bench-events` (and `make bench`), never by `make test`. One blobd on 127.0.0.1 with
a --notify-webhook target (a small receiver on this host that answers 204) and two buckets:
  none    (bucket `plain`) no subscription: a PUT writes nothing more
  one     (bucket `events`) one subscription for s3:ObjectCreated:*: every PUT writes its event
          row in its commit's transaction, and the node's delivery loop sends it meanwhile (its
          lag, the time from the end of a run until every event was delivered, is reported too)
Both buckets of one process, on one data directory, in alternating runs (A,B,B,A,A,B,...; 16
of each, medians; each after a sync, so that no run inherits the dirty pages of the one
before): blob files of both land in the same folders, so the file system's state (ext4's
inode allocation took from 5% to 36% of the CPU between two servers' data directories) weighs
on both alike. The receiver stands for another host, which would take none of blobd's CPU: it
runs in Linux's idle scheduling class (chrt --idle), so that it gets only the CPU this host
leaves. The access log is off (--log-level warning). wrk, 4 KiB bodies, 16 connections, as
bench/run does. Report: bench/results/events.md, with the one/none ratio (goal 0.9) and
blobd's CPU per PUT, the delivery's included (from /proc/PID/task/*/schedstat). Every process
is stopped by PID; every wait is bounded, and the whole run by --time-budget.
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


BUCKETS = {"none": "plain", "one": "events"}


def bootstrap_file(path):
    subscription = {"subscriptions": [{"id": "all", "target": "hook", "events": ["s3:ObjectCreated:*"]}]}
    with open(path, "w") as f:
        json.dump({"buckets": [{"name": BUCKETS["none"]}, {"name": BUCKETS["one"], "notifications": subscription}],
                   "anonymous": ["read", "write", "admin"]}, f)


def cpu_nanos(pid):
    """The CPU time of every thread of `pid` so far, in nanoseconds (exact, unlike the clock ticks of /proc/PID/stat)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread that ended meanwhile
    return total


def drained(port):
    """Waits (at most 60 s) until the delivery loop has sent every event; the seconds it took."""
    started = time.monotonic()
    deadline = started + left(60)
    while time.monotonic() < deadline:
        queue = run(["curl", "-s", f"http://127.0.0.1:{port}/v1/admin/events?limit=1"], want=10).stdout
        if '"pending":0' in queue:
            break
        time.sleep(0.1)
    return time.monotonic() - started


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blobd", default=os.environ.get("BLOBD_BIN", os.path.join(REPO, ".build/release/blobd")))
    ap.add_argument("--rounds", type=int, default=16, help="pairs of runs, one in each bucket")
    ap.add_argument("--duration", type=int, default=5)
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
    path = os.path.join(work, "bootstrap.json")
    bootstrap_file(path)
    server = Blobd("blobd", args.blobd, work, ["--notify-webhook", f"hook=http://127.0.0.1:{port}/", "--bootstrap", path])
    samples, cpu, lags = {}, {}, []
    try:
        server.start()
        url = f"http://127.0.0.1:{server.port}/"
        for bucket in BUCKETS.values():
            # A first run in each, not counted: the first seconds of a new server are slower.
            wrk(args, "put_small.lua", url, 16, [], (f"{bucket}/warm", 4096))
            drained(server.port)
        for r in range(args.rounds):
            # A,B then B,A: a drift over the whole run weighs on both alike.
            for name in (("none", "one") if r % 2 == 0 else ("one", "none")):
                # Every run starts with no dirty page left by the one before (file system
                # metadata that the kernel would otherwise write back during it).
                os.sync()
                before = cpu_nanos(server.proc.pid)
                put = wrk(args, "put_small.lua", url, 16, [], (f"{BUCKETS[name]}/r{r}", 4096))
                # The delivery loop catches up before the next run, so runs do not overlap; the
                # CPU it spends on the run's events counts.
                lag = drained(server.port)
                spent = (cpu_nanos(server.proc.pid) - before) / 1000 / max(put * args.duration, 1)
                samples.setdefault(name, []).append(put)
                cpu.setdefault(name, []).append(spent)
                if name == "one":
                    lags.append(lag)
                log(f"round {r + 1} {name}: PUT {put:,.0f}/s, {spent:.0f} µs of CPU a PUT")
    finally:
        server.stop()
        harness.stop(receiver)
        try:
            run(["rm", "-rf", work], want=120)
        except BenchError as error:  # a slow disk: the numbers still count
            log(f"could not remove {work}: {error}")
    none, one = statistics.median(samples["none"]), statistics.median(samples["one"])
    cpu_none, cpu_one = statistics.median(cpu["none"]), statistics.median(cpu["one"])
    lines = ["# Events: small PUTs with one subscription vs none", "",
             f"{time.strftime('%Y-%m-%d %H:%M')}, one blobd, a bucket with one subscription and one without, "
             f"{args.rounds} runs of {args.duration} s in each, alternating, medians; the receiver is on the same host, "
             "in the idle scheduling class.", "",
             "| workload | none | one subscription | one/none | goal |", "|---|---|---|---|---|",
             f"| 4 KiB PUT, 16 connections (requests/s) | {none:,.0f} | {one:,.0f} | {one / none:.2f} | "
             f"≥ {GOAL} {'ok' if one / none >= GOAL else 'MISS'} |",
             f"| blobd's CPU per PUT, delivery included (µs) | {cpu_none:.0f} | {cpu_one:.0f} | {cpu_none / cpu_one:.2f} | |"]
    lines += ["", "Each run (requests/s): " + "; ".join(f"{name} " + ", ".join(f"{v:,.0f}" for v in samples[name])
                                                 for name in ("none", "one")) + "."]
    lines += ["", "Delivery lag after each run with one subscription (s until no event was pending): "
              + ", ".join(f"{v:.1f}" for v in lags) + "."]
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    harness.interrupt_on_signals()
    main()

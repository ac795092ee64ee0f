#!/usr/bin/env python3
"""Versions benchmark: small GETs and PUTs in a versioned bucket against an unversioned one.

Run by `make bench-versions`, never by `make test`. One blobd on 127.0.0.1 with its S3
listener (open access, access log off) and two buckets: `plain` (never versioned) and `versd`
(versioning Enabled). Workloads run in turn (plain, versd, versd, plain, ...; medians) through
/v1 with wrk, 4 KiB bodies as bench/run does: GET of one blob (64 connections), PUTs of new keys
(16 connections) and PUTs over 64 keys per thread (every one after the first round replaces a
blob, which the versioned bucket keeps as a version). Report: bench/results/versions.md, with
the versd/plain ratio (goal 0.9). blobd is stopped by PID; every wait is bounded, and the whole
run by --time-budget.
"""

import argparse, os, re, statistics, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import harness  # noqa: E402
from harness import BenchError, logger, run, wrk  # noqa: E402

GOAL = 0.9
log = logger("versions")


def start(binary, work):
    err = os.path.join(work, "blobd.stderr.log")
    argv = [binary, "--data-dir", os.path.join(work, "data"), "--listen", "127.0.0.1:0", "--s3-listen", "127.0.0.1:0",
            "--log-level", "warning"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=open(err, "w"))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and proc.poll() is None:
        text = open(err, errors="replace").read()
        v1, s3 = re.search(r"blobd listening on http://127\.0\.0\.1:(\d+)", text), re.search(r"S3 listening on http://127\.0\.0\.1:(\d+)", text)
        if v1 and s3:
            return proc, int(v1.group(1)), int(s3.group(1))
        time.sleep(0.05)
    harness.stop(proc)
    raise BenchError(f"blobd did not start; see {err}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blobd", default=os.environ.get("BLOBD_BIN", os.path.join(REPO, ".build/release/blobd")))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--time-budget", type=int, default=300)
    ap.add_argument("--tmpdir", default=os.environ.get("TMPDIR", "/tmp"))
    ap.add_argument("--out", default=os.path.join(HERE, "results", "versions.md"))
    args = ap.parse_args()
    harness.set_budget(args.time_budget)
    work = run(["mktemp", "-d", os.path.join(args.tmpdir, "blobd-versions.XXXXXX")], check=True).stdout.strip()
    proc = None
    samples = {}
    try:
        proc, port, s3 = start(args.blobd, work)
        body = os.path.join(work, "small4k")
        with open(body, "wb") as f:
            f.write(os.urandom(4096))
        for bucket in ("plain", "versd"):
            run(["curl", "-sf", "-X", "PUT", f"http://127.0.0.1:{s3}/{bucket}"], want=20, check=True)
        run(["curl", "-sf", "-X", "PUT", "--data-binary", "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>",
             f"http://127.0.0.1:{s3}/versd?versioning"], want=20, check=True)
        for bucket in ("plain", "versd"):
            run(["curl", "-sf", "-X", "PUT", "--data-binary", "@" + body, f"http://127.0.0.1:{port}/v1/blobs/{bucket}/small4k"],
                want=20, check=True)
        base = f"http://127.0.0.1:{port}"
        for r in range(args.rounds):
            for bucket in (("plain", "versd") if r % 2 == 0 else ("versd", "plain")):
                get = wrk(args, "get_small.lua", f"{base}/v1/blobs/{bucket}/small4k", 64, [])
                put = wrk(args, "put_small.lua", base + "/", 16, [], (f"{bucket}/r{r}", 4096))
                over = wrk(args, "put_overwrite.lua", base + "/", 16, [], (f"{bucket}/o{r}", 4096, 64))
                for name, value in (("get", get), ("put", put), ("over", over)):
                    samples.setdefault((bucket, name), []).append(value)
                log(f"round {r + 1} {bucket}: GET {get:,.0f}/s PUT {put:,.0f}/s overwrite {over:,.0f}/s")
    finally:
        if proc:
            harness.stop(proc)
        run(["rm", "-rf", work], want=60)
    lines = ["# Versions: a versioned bucket vs an unversioned one", "",
             f"{time.strftime('%Y-%m-%d %H:%M')}, {args.rounds} rounds of {args.duration} s, medians (requests/s), one blobd, /v1.", "",
             "| workload | unversioned | versioned | versioned/unversioned | goal |", "|---|---|---|---|---|"]
    for w, label in (("get", "4 KiB GET, 64 connections"), ("put", "4 KiB PUT of new keys, 16 connections"),
                     ("over", "4 KiB PUT over 64 keys a thread, 16 connections")):
        p, v = statistics.median(samples[("plain", w)]), statistics.median(samples[("versd", w)])
        lines.append(f"| {label} | {p:,.0f} | {v:,.0f} | {v / p:.2f} | ≥ {GOAL} {'ok' if v / p >= GOAL else 'MISS'} |")
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    harness.interrupt_on_signals()
    main()

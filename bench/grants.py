#!/usr/bin/env python3
"""Grants benchmark: small GETs and PUTs with 1,000 keys of 10 grants each, against open access.

Run by `make bench` (after bench/run) and `make bench-grants`, never by `make test`. Two blobd
processes on 127.0.0.1, each on its own data directory, run in turn (A,B,A,B,...; medians):
  open    no tokens file: every request allowed
  grants  a --bootstrap file of 1,000 keys with 10 grants each (bucket- and prefix-scoped); the
          client is key 500, whose tenth grant is the one that allows bench/*
Both with their access log off (--log-level warning). wrk, 4 KiB bodies, 16 connections for PUT
and 64 for GET, as bench/run does. Report: bench/results/grants.md, with the grants/open ratio
(goal 0.95). blobd is stopped by PID; every wait is bounded, and the whole run by --time-budget.
"""

import argparse, json, os, statistics, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import harness  # noqa: E402
from harness import Blobd, logger, run, wrk  # noqa: E402

KEYS, GRANTS, CLIENT = 1000, 10, 500
GOAL = 0.95
log = logger("grants")


def bootstrap_file(path):
    """1,000 keys of 10 prefix grants on their own tenants; the client key's last two grants are
    read and write on bench, so a request is decided after its eight other grants."""
    keys = []
    for n in range(KEYS):
        grants = [f"read:tenant{n}-{g}/in/*" for g in range(GRANTS)]
        if n == CLIENT:
            grants[-2:] = ["read:bench", "write:bench"]
        keys.append({"name": f"key{n}", "grants": grants, "token": f"bench-token-{n:04d}",
                     "access_key_id": f"BENCHKEY{n:06d}", "secret_access_key": f"bench-secret-{n:06d}"})
    with open(path, "w") as f:
        json.dump({"buckets": [{"name": "bench"}], "keys": keys}, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blobd", default=os.environ.get("BLOBD_BIN", os.path.join(REPO, ".build/release/blobd")))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--time-budget", type=int, default=240)
    ap.add_argument("--tmpdir", default=os.environ.get("TMPDIR", "/tmp"))
    ap.add_argument("--out", default=os.path.join(HERE, "results", "grants.md"))
    args = ap.parse_args()
    harness.set_budget(args.time_budget)
    work = run(["mktemp", "-d", os.path.join(args.tmpdir, "blobd-grants.XXXXXX")], check=True).stdout.strip()
    bootstrap = os.path.join(work, "bootstrap.json")
    bootstrap_file(bootstrap)
    servers = [Blobd("open", args.blobd, work, []), Blobd("grants", args.blobd, work, ["--bootstrap", bootstrap])]
    auth = {"open": [], "grants": [f"Authorization: Bearer bench-token-{CLIENT:04d}"]}
    samples = {}
    try:
        for s in servers:
            s.start()
            body = os.path.join(work, "small4k")
            with open(body, "wb") as f:
                f.write(os.urandom(4096))
            h = sum((["-H", x] for x in auth[s.name]), [])
            run(["curl", "-sf", "-X", "PUT", "--data-binary", "@" + body] + h + [f"http://127.0.0.1:{s.port}/v1/blobs/bench/small4k"],
                want=20, check=True)
        for r in range(args.rounds):
            for s in (servers if r % 2 == 0 else servers[::-1]):
                base = f"http://127.0.0.1:{s.port}"
                get = wrk(args, "get_small.lua", base + "/v1/blobs/bench/small4k", 64, auth[s.name])
                put = wrk(args, "put_small.lua", base + "/", 16, auth[s.name], (f"bench/r{r}", 4096))
                samples.setdefault((s.name, "get"), []).append(get)
                samples.setdefault((s.name, "put"), []).append(put)
                log(f"round {r + 1} {s.name}: GET {get:,.0f}/s PUT {put:,.0f}/s")
    finally:
        for s in servers:
            s.stop()
        run(["rm", "-rf", work], want=60)
    lines = ["# Grants: 1,000 keys of 10 grants each vs open access", "",
             f"{time.strftime('%Y-%m-%d %H:%M')}, {args.rounds} rounds of {args.duration} s, medians (requests/s).", "",
             "| workload | open | grants | grants/open | goal |", "|---|---|---|---|---|"]
    for w, label in (("get", "4 KiB GET, 64 connections"), ("put", "4 KiB PUT, 16 connections")):
        o, g = statistics.median(samples[("open", w)]), statistics.median(samples[("grants", w)])
        lines.append(f"| {label} | {o:,.0f} | {g:,.0f} | {g / o:.2f} | ≥ {GOAL} {'ok' if g / o >= GOAL else 'MISS'} |")
    text = "\n".join(lines) + "\n"
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    harness.interrupt_on_signals()
    main()

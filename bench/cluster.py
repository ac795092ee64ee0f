#!/usr/bin/env python3
"""Cluster benchmark (`make bench-cluster`, see bench/README.md): four set-ups on 127.0.0.1 in one
temp dir, every workload run against them in turn (A,B,C,A,B,C; medians):
  sqlite  one node, SQLite index, local data dir
  pg1     one node on a throwaway PostgreSQL 15 (--index, --node-id a), local data dir
  pg2     nodes a and b on one database and one local data dir, one wrk per node, started together
  ceph    one node with its data dir on a ceph-fuse mount (tools/ceph-local.sh); SQLite index
          there, PostgreSQL if SQLite fails there
Small PUTs (new keys) and GETs for sqlite/pg1/pg2, a --big upload and download for sqlite/ceph.
Everything is stopped by PID in `finally`; every wait is bounded, the run by --time-budget.
"""

import argparse, http.client, os, re, shutil, signal, statistics, subprocess, sys, tempfile, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import harness  # noqa: E402
from harness import BenchError, Meter, left, logger  # noqa: E402
from bench import GiB, KiB, MiB, children_of, free_port, parse_size, proc_cpu_ticks  # noqa: E402

PG_BIN = "/usr/lib/postgresql/15/bin"
CEPH_LOCAL = os.path.join(REPO, "tools", "ceph-local.sh")
SMALL, CONNS = 4 * KiB, 16
LABELS = {"sqlite": "1 node, SQLite", "pg1": "1 node, PostgreSQL", "pg2": "2 nodes, PostgreSQL", "ceph": "1 node, CephFS"}
GOALS = {"PUT": 0.7, "GET": 0.5}  # PostgreSQL / SQLite, one node
MARKER = None


log = logger("cluster")


def run(argv, want=60, check=True):
    return harness.run(argv, want, check)


class Postgres:
    """A throwaway PostgreSQL 15 cluster in DIR, on 127.0.0.1:PORT (and a socket in DIR)."""

    def __init__(self, d, stats):
        self.d, self.port, self.pid, self.stats = d, free_port(), None, stats
        self.as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    def start(self):
        os.makedirs(self.d)
        if self.as_pg:
            shutil.chown(self.d, "postgres")
        run(self.as_pg + [f"{PG_BIN}/initdb", "-D", f"{self.d}/data", "-U", "postgres", "-A", "trust", "-E", "UTF8",
                          "--locale", "C.UTF-8"], want=120)
        opts = f"-p {self.port} -k {self.d} -c listen_addresses=127.0.0.1 -c max_connections=200"
        if self.stats:
            opts += " -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track_utility=on"
        run(self.as_pg + [f"{PG_BIN}/pg_ctl", "-D", f"{self.d}/data", "-o", opts, "-l", f"{self.d}/log", "-w", "start"])
        self.pid = int(open(f"{self.d}/data/postmaster.pid").readline())
        self.sql("CREATE ROLE blobd LOGIN")
        if self.stats:
            self.sql("CREATE EXTENSION pg_stat_statements")
        log(f"PostgreSQL pid {self.pid} on 127.0.0.1:{self.port}")
        return self

    def sql(self, q, db="postgres"):
        return run(["psql", "-h", self.d, "-p", str(self.port), "-U", "postgres", "-d", db, "-XAtqc", q], want=30).stdout

    def database(self, db):
        """Creates database `db` for blobd; returns its URL."""
        self.sql(f"CREATE DATABASE {db} OWNER blobd")
        return f"postgres://blobd@127.0.0.1:{self.port}/{db}"

    def pids(self):
        return [self.pid] + children_of(self.pid) if self.pid and os.path.exists(f"/proc/{self.pid}") else []

    def ticks(self):
        """CPU of the postmaster, of its live children, and of those it reaped (its cutime + cstime)."""
        try:
            own = sum(int(x) for x in open(f"/proc/{self.pid}/stat").read().rsplit(")", 1)[1].split()[11:15])
        except (OSError, ValueError):
            return 0
        return own + sum(proc_cpu_ticks(p) for p in children_of(self.pid))

    def counters(self, db):
        """(statement label -> calls so far in database `db`, WAL bytes so far)."""
        calls = {}
        for line in self.sql(r"SELECT calls, regexp_replace(query, '\s+', ' ', 'g') FROM pg_stat_statements WHERE "
                             f"dbid = (SELECT oid FROM pg_database WHERE datname = '{db}')").splitlines() if self.stats else []:
            if "|" in line:
                n, q = line.split("|", 1)
                table = re.search(r"\b(?:FROM|INTO|UPDATE)\s+(\w+)", q, re.I)
                label = q.split()[0].upper() + (" " + table.group(1) if table else "") + (" FOR UPDATE" * ("FOR UPDATE" in q))
                calls[label] = calls.get(label, 0) + int(n)
        return calls, int(self.sql("SELECT pg_current_wal_lsn() - '0/0'"))

    def stop(self):
        for sig in (signal.SIGINT, signal.SIGQUIT):  # fast shutdown; after 30 s immediate
            if not self.pids():
                return
            os.kill(self.pid, sig)
            for _ in range(300):  # 30 s
                if not os.path.exists(f"/proc/{self.pid}"):
                    return
                time.sleep(0.1)


class Node:
    """One blobd, listening on a free port; its log (level warning) goes to a file."""

    def __init__(self, a, name, data, index=None, node_id=None):
        self.name, self.data, self.proc, self.port, self.offset = name, data, None, None, 0
        self.argv = [a.bin, "--data-dir", data, "--listen", "127.0.0.1:0", "--log-level", "warning"]
        self.argv += ["--index", index, "--node-id", node_id] if index else []
        self.log = os.path.join(a.work, f"{name}.stderr.log")

    def start(self):
        os.makedirs(self.data, exist_ok=True)
        with open(self.log, "wb") as err:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=err, stderr=err, start_new_session=True)
        for _ in range(300):  # 30 s
            m = re.search(r"blobd listening on http://127\.0\.0\.1:(\d+)", open(self.log, errors="replace").read())
            if m:
                self.port, self.offset = int(m.group(1)), os.path.getsize(self.log)
                self.base = f"http://127.0.0.1:{self.port}"
                return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise BenchError(f"{self.name} did not start: {open(self.log, errors='replace').read()[-800:]}")

    def stop(self):
        harness.stop(self.proc)

    def errors(self):  # whatever it logged after start-up
        with open(self.log, "rb") as f:
            f.seek(self.offset)
            return [x for x in f.read().decode(errors="replace").splitlines() if x.strip()]


class Setup:
    def __init__(self, name, nodes, pg=None, db=None, ceph_dir=None):
        self.name, self.nodes, self.pg, self.db, self.ceph_dir = name, nodes, pg, db, ceph_dir

    def ceph_pids(self):  # every Ceph daemon and ceph-fuse
        return [int(p) for p in open(os.path.join(self.ceph_dir, "pids")).read().split()] if self.ceph_dir else []

    def pids(self):
        return [n.proc.pid for n in self.nodes] + (self.pg.pids() if self.pg else []) + self.ceph_pids()

    def cpu(self):
        parts = {"blobd": sum(proc_cpu_ticks(n.proc.pid) for n in self.nodes)}
        if self.pg:
            parts["postgres"] = self.pg.ticks()
        if self.ceph_dir:
            parts["ceph"] = sum(proc_cpu_ticks(p) for p in self.ceph_pids())
        return parts


def put_many(port, keys, body, threads=8):
    """PUTs `keys` over `threads` keep-alive connections (one request per key); returns the failures."""
    bad = []

    def work(chunk):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
        for k in chunk:
            try:
                c.request("PUT", f"/v1/blobs/{k}", body=body)
                r = c.getresponse()
                r.read()
                bad.extend([] if r.status in (200, 201) else [f"{k}: HTTP {r.status}"])
            except OSError as e:
                bad.append(f"{k}: {e}")
    ts = [threading.Thread(target=work, args=(keys[i::threads],), daemon=True) for i in range(threads)]
    [t.start() for t in ts]
    [t.join(timeout=left(120)) for t in ts]
    return bad + ["still running"] * sum(t.is_alive() for t in ts)


def curl(args, want):
    """One curl request: (HTTP code, bytes up, bytes down, seconds)."""
    code, up, down, secs, message = harness.curl(args, want)
    if code == 0:
        raise BenchError(f"curl {' '.join(args)[:150]}: {message}")
    return code, up, down, secs


class Cluster:
    def __init__(self, a):
        self.a, self.setups, self.samples, self.notes, self.info = a, {}, {}, [], {}
        self.pg, self.nodes, self.ceph = None, [], None

    def node(self, *args):
        self.nodes.append(Node(self.a, *args))
        return self.nodes[-1].start()

    def start(self):
        a, want = self.a, set(self.a.setups)
        if want & {"pg1", "pg2"}:
            self.pg = Postgres(os.path.join(a.work, "pg"), a.pg_stats).start()
        if "sqlite" in want:
            self.setups["sqlite"] = Setup("sqlite", [self.node("sqlite", f"{a.work}/sqlite-data")])
        if "pg1" in want:
            self.setups["pg1"] = Setup("pg1", [self.node("pg1-a", f"{a.work}/pg1-data", self.pg.database("pg1"), "a")],
                                       self.pg, "pg1")
        if "pg2" in want:
            url = self.pg.database("pg2")
            self.setups["pg2"] = Setup("pg2", [self.node(f"pg2-{i}", f"{a.work}/pg2-data", url, i) for i in "ab"],
                                       self.pg, "pg2")
        small = os.urandom(SMALL)
        for s in self.setups.values():  # what the GETs read, written through the first node
            bad = put_many(s.nodes[0].port, [f"get/{i:04d}" for i in range(a.get_keys)], small)
            if bad:
                raise BenchError(f"{s.name}: uploading the GET keys failed: {bad[:3]}")
        self.targets = os.path.join(a.work, "get.targets")
        with open(self.targets, "w") as f:
            f.writelines(f"/v1/blobs/get/{i:04d}\n" for i in range(a.get_keys))
        log("up: " + "; ".join(f"{n.name} pid {n.proc.pid} {n.base}" for n in self.nodes))

    def start_ceph(self):
        a, d, mnt = self.a, os.path.join(self.a.work, "ceph"), os.path.join(self.a.work, "cephfs")
        t0, self.ceph = time.monotonic(), d
        p = run([CEPH_LOCAL, "start", d, "--fuse", mnt], want=240, check=False)
        if p.returncode != 0:
            raise BenchError(f"tools/ceph-local.sh start failed:\n{p.stderr[-1500:]}")
        log(f"Ceph cluster and ceph-fuse mount {mnt} up in {time.monotonic() - t0:.0f} s")
        t1, pg = time.monotonic(), None
        try:  # 20 PUTs one at a time: does SQLite work on ceph-fuse, and how fast?
            n = self.node("ceph", f"{mnt}/blobd")
            bad = put_many(n.port, [f"probe/{i}" for i in range(20)], os.urandom(SMALL), threads=1)
        except BenchError as e:
            bad = [str(e)[-300:]]
        per_put = (time.monotonic() - t1) / 20
        if bad or per_put > 0.5:
            self.notes.append(f"SQLite on ceph-fuse failed or was too slow ({bad[:2]}, {1000 * per_put:.0f} ms per "
                              "PUT): set-up 4 uses PostgreSQL for the index")
            self.nodes[-1].stop()
            pg = self.pg = self.pg or Postgres(os.path.join(a.work, "pg"), a.pg_stats).start()
            n = self.node("ceph-pg", f"{mnt}/blobd-pg", pg.database("ceph"), "c")
        self.info["set-up 4 index"] = "PostgreSQL" if pg else \
            f"SQLite in the data dir on ceph-fuse (start-up probe: 4 KiB PUTs one at a time, {1000 * per_put:.0f} ms each)"
        self.setups["ceph"] = Setup("ceph", [n], pg, "ceph", ceph_dir=d)

    def stop(self):
        """Nodes first (one may keep the ceph-fuse mount busy), then PostgreSQL, then Ceph, then the temp dir."""
        for n in reversed(self.nodes):
            try:
                n.stop()
            except Exception as e:  # keep stopping the others
                log(f"stopping {n.name}: {e}")
        if self.pg:
            self.pg.stop()
        if self.ceph:
            try:
                subprocess.run([CEPH_LOCAL, "stop", self.ceph], stdin=subprocess.DEVNULL, timeout=90)
            except subprocess.TimeoutExpired:
                log(f"tools/ceph-local.sh stop {self.ceph} timed out")
        shutil.rmtree(self.a.work, ignore_errors=True)
        with open(MARKER, "w") as f:  # bench.py's: ext4 here creates files slowly for minutes after this
            f.write(f"{time.time()}\n")
        log(f"stopped every node, PostgreSQL and Ceph; removed {self.a.work}")

    # -- workloads

    def rounds(self, names):
        return [(r, self.setups[n]) for r in range(1, self.a.rounds + 1) for n in names if n in self.setups]

    def prepare_write(self):
        run(["sync"], want=120)  # earlier dirty pages are not flushed inside the measurement
        if self.a.touch_gib > 0:
            run([sys.executable, os.path.join(HERE, "touchmem.py"), str(self.a.touch_gib)], want=120)

    def record(self, wl, r, s, m, what, **v):
        v.update(cpu=m.parts, client_cpu=m.client_cpu, steal_pct=m.steal_pct, busy_pct=m.busy_pct, foreign_pct=m.foreign_pct)
        self.samples.setdefault((wl, s.name), []).append(v)
        if m.steal_pct > 10 or m.foreign_pct > 15:
            self.notes.append(f"{wl} {s.name} r{r}: hypervisor steal {m.steal_pct:.0f}% of all CPU time, other processes "
                              f"{m.foreign_pct:.0f}% of a core ({m.foreign_top})")
        log(f"{wl:9} r{r} {s.name:6} {what}  cpu {' '.join(f'{k} {x:.2f}s' for k, x in m.parts.items())}  "
            f"busy {m.busy_pct:.0f}%  steal {m.steal_pct:.0f}%")

    def small(self, method):
        """One wrk per node, started together; the 16 connections and 2 threads split evenly."""
        a = self.a
        for r, s in self.rounds(["sqlite", "pg1", "pg2"]):
            if method == "PUT":
                self.prepare_write()
            n = len(s.nodes)
            script = ["cluster_put.lua"] if method == "PUT" else ["s3_urls.lua"]
            argvs = [["wrk", "-t", str(max(1, 2 // n)), "-c", str(CONNS // n), "-d", f"{a.duration}s", "--timeout", "5s",
                      "-s"] + script + [x.base, "--"] + ([f"put-r{r}-{x.name}", str(SMALL)] if method == "PUT" else
                                                         [self.targets, "GET"]) for x in s.nodes]
            db0 = s.pg.counters(s.db) if s.pg else None
            with Meter(s.cpu, s.pids) as m:
                procs = [subprocess.Popen(x, cwd=HERE, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True) for x in argvs]
                try:
                    outs = [p.communicate(timeout=left(a.duration + 30)) for p in procs]
                finally:
                    for p in procs:
                        if p.poll() is None:
                            p.kill()
                            p.wait(timeout=5)
            ws = [re.search(r"^BENCH (.*)$", out, re.M) for out, _ in outs]
            if not all(ws):
                raise BenchError(f"{s.name}: no summary from wrk:\n{outs[0][0][-800:]}\n{outs[0][1][-800:]}")
            ws = [{k: int(v) for k, v in (kv.split("=") for kv in w.group(1).split())} for w in ws]
            node_rps = [(w["requests"] - w["non2xx"]) / (w["duration_us"] / 1e6) for w in ws]
            good, asked = sum(w["requests"] - w["non2xx"] for w in ws), sum(w["requests"] for w in ws)
            non2xx, errors = sum(w["non2xx"] for w in ws), sum(w["connect"] + w["read"] + w["write"] + w["timeout"] for w in ws)
            v = dict(rps=sum(node_rps), node_rps=node_rps, units=max(good, 1), requests=asked, non2xx=non2xx,
                     socket_errors=errors, ok=non2xx == 0 and errors == 0, p99_ms=max(w["p99_us"] for w in ws) / 1000,
                     p50_ms=sum(w["p50_us"] * w["requests"] for w in ws) / max(asked, 1) / 1000)
            if db0:
                (c0, wal0), (c1, wal1) = db0, s.pg.counters(s.db)
                v["stmts"] = {k: (c1[k] - c0.get(k, 0)) / max(good, 1) for k in c1 if c1[k] > c0.get(k, 0)}
                v["wal_bytes"] = (wal1 - wal0) / max(good, 1)
            if not v["ok"]:
                self.notes.append(f"small {method} {s.name} r{r}: {non2xx} non-2xx answers and {errors} socket errors "
                                  f"of {asked} (run INVALID): {' '.join(e.strip()[:200] for _, e in outs)}")
            self.record(f"small_{method.lower()}", r, s, m, f"{v['rps']:7.0f} req/s  p50 {v['p50_ms']:.2f} ms  p99 "
                        f"{v['p99_ms']:.2f} ms  non-2xx {non2xx}", **v)
            for x in s.nodes if method == "PUT" else []:  # every node reads what every node wrote
                for y in s.nodes:  # (wrk drops each thread's first request(): keys start at 2)
                    code, _, down, _ = curl([f"{x.base}/v1/blobs/put-r{r}-{y.name}/0-2"], 20)
                    if code != 200 or down != SMALL:
                        self.notes.append(f"{s.name}: GET from {x.name} of a key PUT to {y.name}: HTTP {code}, {down} B")
        run(["sync"], want=120)

    def big(self, method):
        """PUT: `curl -T` of the big file to a fresh key; GET: --get-repeats downloads of the last one."""
        a, n = self.a, (1 if method == "PUT" else self.a.get_repeats)
        if method == "PUT":
            self.src, chunk = os.path.join(a.work, "big.bin"), os.urandom(64 * MiB)
            with open(self.src, "wb") as f:
                for off in range(0, a.big, len(chunk)):  # bounded: big / 64 MiB iterations
                    f.write(chunk[:a.big - off])
            if "ceph" in a.setups:
                self.start_ceph()
        for r, s in self.rounds(["sqlite", "ceph"]):
            url = f"{s.nodes[0].base}/v1/blobs/big-r{r if method == 'PUT' else a.rounds}"
            if method == "PUT":
                self.prepare_write()
            with Meter(s.cpu, s.pids) as m:
                res = [curl(["-T", self.src, url] if method == "PUT" else [url], 600) for _ in range(n)]
            moved, secs, codes = sum(x[1] if method == "PUT" else x[2] for x in res), sum(x[3] for x in res), [x[0] for x in res]
            ok = moved == n * a.big and all(x == (201 if method == "PUT" else 200) for x in codes)
            if not ok:
                self.notes.append(f"big {method} {s.name} r{r}: HTTP {codes}, {moved} B (run INVALID)")
            self.record(f"big_{method.lower()}", r, s, m, f"{moved / secs / 1e6:6.0f} MB/s  HTTP {codes}",
                        mbps=moved / secs / 1e6, ok=ok, status=codes, units=n * a.big / GiB)
            if method == "PUT":
                run(["sync"], want=120)

    # -- report

    def med(self, wl, name, f):
        xs = [x[f] for x in self.samples.get((wl, name), [])]
        return statistics.median(xs) if xs else None

    def big_label(self):
        return f"{self.a.big / GiB:g} GiB" if self.a.big >= GiB else f"{self.a.big / MiB:g} MiB"

    def cpu_cell(self, wl, n, scale, digits):
        """Median server CPU per request (small) or per GiB (big): total (and its parts)."""
        runs = self.samples[(wl, n)]
        med = lambda f: f"{scale * statistics.median(f(x) / x['units'] for x in runs):,.{digits}f}"  # noqa: E731
        parts = list(runs[0]["cpu"])
        return med(lambda x: sum(x["cpu"].values())) + ("" if len(parts) == 1 else
                                                         " (" + " + ".join(med(lambda x: x["cpu"][p]) for p in parts) + ")")

    def table(self):
        names = [n for n in LABELS if any(k[1] == n for k in self.samples)]
        out = ["| workload | " + " | ".join(f"{list(LABELS).index(n) + 1}. {LABELS[n]}" for n in names) + " |",
               "|---" * (len(names) + 1) + "|"]

        def row(label, wl, fn):
            out.append(f"| {label} | " + " | ".join(fn(n) if (wl, n) in self.samples else "–" for n in names) + " |")

        def pg_share(wl, n):
            xs = [100 * x["cpu"]["postgres"] / max(sum(x["cpu"].values()), 1e-9) for x in self.samples[(wl, n)] if "postgres" in x["cpu"]]
            return f"{statistics.median(xs):.0f}%" if xs else "–"
        for wl, label in (("small_put", f"{SMALL // KiB} KiB PUT, new keys, {CONNS} conns, req/s"),
                          ("small_get", f"{SMALL // KiB} KiB GET, {self.a.get_keys} keys, {CONNS} conns, req/s"),
                          ("big_put", f"{self.big_label()} upload (curl -T, until the 201), MB/s"),
                          ("big_get", f"{self.big_label()} download (curl, {self.a.get_repeats}× per run), MB/s")):
            if not any(k[0] == wl for k in self.samples):
                continue
            field = "rps" if wl.startswith("small") else "mbps"
            row(label, wl, lambda n: f"{self.med(wl, n, field):,.0f}" + ("" if all(x["ok"] for x in self.samples[(wl, n)]) else " INVALID"))
            if field == "rps":
                row("↳ latency p50 / p99, ms", wl, lambda n: f"{self.med(wl, n, 'p50_ms'):.2f} / {self.med(wl, n, 'p99_ms'):.2f}")
                row("↳ server CPU per request, µs: total (blobd + PostgreSQL)", wl, lambda n: self.cpu_cell(wl, n, 1e6, 0))
                row("↳ PostgreSQL's share of the server CPU", wl, lambda n: pg_share(wl, n))
            else:
                row("↳ server CPU, s/GiB: total (blobd + Ceph daemons and ceph-fuse)", wl, lambda n: self.cpu_cell(wl, n, 1, 2))
            row("↳ machine busy / hypervisor steal, % of all CPU", wl,
                lambda n: f"{self.med(wl, n, 'busy_pct'):.0f} / {self.med(wl, n, 'steal_pct'):.1f}")
        return "\n".join(out)

    def ratios(self):
        out = []
        for method in ("PUT", "GET"):
            wl = f"small_{method.lower()}"
            sq, p1, p2 = (self.med(wl, n, "rps") for n in ("sqlite", "pg1", "pg2"))
            tag = "" if all(x["ok"] for n in ("sqlite", "pg1", "pg2") for x in self.samples.get((wl, n), [])) else " (INVALID)"
            if sq and p1:
                out.append(f"- small {method}s, PostgreSQL / SQLite (one node): **{p1 / sq:.2f}** (goal ≥ {GOALS[method]}: "
                           f"{'met' if p1 / sq >= GOALS[method] else 'MISSED'}){tag}")
            if p1 and p2:
                out.append(f"- small {method}s, two nodes combined / one node (PostgreSQL): **{p2 / p1:.2f}**{tag}")
        for wl, what in (("big_put", "upload"), ("big_get", "download")):
            sq, ce = self.med(wl, "sqlite", "mbps"), self.med(wl, "ceph", "mbps")
            if sq and ce:
                out.append(f"- {self.big_label()} {what}, CephFS / local disk: **{ce / sq:.2f}**")
        return "\n".join(out)

    def db_rows(self):
        out = []
        for (wl, n), runs in self.samples.items():
            if "stmts" in runs[0]:
                per = {k: statistics.median(x["stmts"].get(k, 0) for x in runs) for k in runs[0]["stmts"]}
                out.append(f"- {wl} {n}: " + (f"{sum(per.values()):.2f} statements per request (" + ", ".join(
                    f"{k} {v:.3f}" for k, v in sorted(per.items(), key=lambda kv: -kv[1]) if v >= 0.001) + "); " if per else "")
                    + f"WAL {statistics.median(x['wal_bytes'] for x in runs):,.0f} B per request")
        return "\n".join(out)

    def details(self):
        out = []
        for (wl, n), runs in self.samples.items():
            fields = ["rps", "node_rps", "requests", "non2xx", "socket_errors", "p50_ms", "p99_ms"] if "rps" in runs[0] else ["mbps", "status"]
            fmt = lambda v: f"{v:.4g}" if isinstance(v, float) else "+".join(map(fmt, v)) if isinstance(v, list) else str(v)  # noqa: E731
            parts = [f"{k} " + "/".join(fmt(x[k]) for x in runs) for k in fields]
            parts += [f"{p} cpu_s " + "/".join(f"{x['cpu'][p]:.2f}" for x in runs) for p in runs[0]["cpu"]]
            parts += [f"{k} " + "/".join(f"{x[k]:.3g}" for x in runs) for k in ("client_cpu", "busy_pct", "steal_pct", "foreign_pct")]
            out.append(f"- {wl} {n}: " + ", ".join(parts))
        return "\n".join(out)


def report(a, c, total):
    def first(argv):
        p = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        return ((p.stdout + p.stderr).strip().splitlines() or ["?"])[0]
    built = time.strftime("%Y-%m-%d %H:%M", time.localtime(os.stat(a.blobd).st_mtime))
    versions = [f"blobd built {built}, repo HEAD {first(['git', '-C', REPO, 'rev-parse', '--short', 'HEAD'])}",
                first([f"{PG_BIN}/postgres", "--version"]), first(["ceph", "--version"]), first(["wrk", "-v"]),
                first(["curl", "--version"]), f"kernel {os.uname().release}, {os.cpu_count()} cores"]
    odd = c.notes + [f"{n.name} logged: " + " / ".join(x[:200] for x in n.errors()[:3]) for n in c.nodes if n.errors()] \
        + [f"{n.name} exited (code {n.proc.returncode})" for n in c.nodes if n.proc.poll() is not None]
    all_ok = all(x["ok"] for runs in c.samples.values() for x in runs)
    return "\n".join([
        f"# blobd cluster benchmark — {time.strftime('%Y-%m-%d %H:%M:%S %Z')}", "", c.table(), "", c.ratios(), "",
        f"Medians of {a.rounds} runs per set-up, run in turn; total time {total:.0f} s. wrk: {CONNS} connections, 2 "
        f"threads, {a.duration} s per run; two nodes: two wrk processes started together, one per node, 1 thread and "
        f"{CONNS // 2} connections each (req/s: the sum of their rates; p50: their request-weighted mean; p99: the "
        f"larger). PUTs create new keys only (cluster_put.lua); GETs cycle over {a.get_keys} keys uploaded first "
        "through the first node (s3_urls.lua). MB/s = 10^6 B/s over curl's time; an upload's ends with the 201, "
        "which blobd sends after its fsync. Server CPU: utime+stime deltas of the set-up's blobd nodes, of every "
        "PostgreSQL process (postmaster, live children, and reaped ones through the postmaster's cutime+cstime), "
        "and of the Ceph daemons and ceph-fuse. Busy and steal: shares of all CPU time (/proc/stat); client, "
        f"nodes and database share the machine's {os.cpu_count()} cores. `sync` and touchmem.py ({a.touch_gib:g} "
        "GiB) before every write run. PostgreSQL 15 with its defaults (fsync, synchronous_commit on) but "
        "max_connections 200" + (", pg_stat_statements loaded" if a.pg_stats else "") + ".", "",
        "Versions: " + "; ".join(versions) + ".", "",
        "Checks: " + ("every response was 2xx" if all_ok else "SOME RUNS HAD NON-2xx ANSWERS OR SOCKET ERRORS (INVALID)")
        + "".join(f"; {k}: {v}" for k, v in c.info.items()) + ".", "",
        "Statements per request (pg_stat_statements; each is one round trip; BEGIN and COMMIT once per group commit):",
        "", c.db_rows() or "- (none: no PostgreSQL set-up, or --no-pg-stats)", "",
        "Anomalies:" + ("" if odd else " none")] + [f"- {x}" for x in odd] + [
        "", "Per-run values (run 1/run 2/...; CPU in s; busy, steal in % of all CPU; foreign in % of a core):", "",
        c.details(), ""])


def main():
    global MARKER
    ap = argparse.ArgumentParser(description="blobd on SQLite, PostgreSQL, two nodes and CephFS (see bench/README.md)")
    harness.add_common_arguments(ap, REPO, "set-up", "cluster.md", time_budget=720)
    ap.add_argument("--big", type=parse_size, default=GiB, help="size of the big upload (0: no big workloads, no Ceph)")
    ap.add_argument("--get-repeats", type=int, default=2, help="big downloads per run")
    ap.add_argument("--get-keys", type=int, default=1000, help="4 KiB keys the small GETs cycle over")
    ap.add_argument("--setups", default="sqlite,pg1,pg2,ceph", help="a subset, for experiments")
    ap.add_argument("--no-pg-stats", dest="pg_stats", action="store_false", help="without pg_stat_statements")
    a = ap.parse_args()
    if a.quick:
        a.rounds, a.duration, a.big, a.get_repeats, a.get_keys, a.touch_gib = 1, 2, min(a.big, 64 * MiB), 1, 100, 0
    a.out = ("" if a.quick else os.path.join(HERE, "results", "cluster.md")) if a.out is None else a.out
    a.setups = [x for x in a.setups.split(",") if x and (a.big or x != "ceph")]
    t_start = time.monotonic()
    harness.set_budget(a.time_budget)
    missing = [x for x in ("wrk", "curl", "psql", f"{PG_BIN}/initdb") if shutil.which(x) is None]
    if missing or not os.access(a.blobd, os.X_OK):
        sys.exit(f"cluster: missing {' '.join(missing) or a.blobd} (make deps bench-deps; make release)")
    h = subprocess.run([a.blobd, "serve", "--help"], capture_output=True, text=True, timeout=20)
    if {"pg1", "pg2"} & set(a.setups) and "--index" not in h.stdout + h.stderr:
        sys.exit(f"cluster: {a.blobd} has no --index option (an older build?)")
    if a.big * a.rounds > 6 * GiB or shutil.disk_usage(a.tmpdir).free < a.big * (2 + 2 * a.rounds) + 2 * GiB:
        sys.exit("cluster: --big × --rounds must stay under 6 GiB (the Ceph OSD is an 8 GiB file) and fit in --tmpdir")

    harness.interrupt_on_signals()
    MARKER = os.path.join(a.tmpdir, "blobd-bench.last-cleanup")
    c = Cluster(a)
    if os.path.exists(MARKER) and time.time() - os.stat(MARKER).st_mtime < 420:
        c.notes.append(f"a benchmark's clean-up (up to ~10^5 small files deleted) was {time.time() - os.stat(MARKER).st_mtime:.0f} "
                       "s before the start; ext4 creates files slowly for ~6 min after that: small PUTs may read low")
        log("NOTE " + c.notes[-1])
    a.work = tempfile.mkdtemp(prefix="blobd-cluster.", dir=a.tmpdir)
    os.chmod(a.work, 0o755)  # PostgreSQL (user postgres) keeps its cluster in here
    a.bin = shutil.copy2(a.blobd, os.path.join(a.work, "blobd"))  # a rebuild during the run changes nothing
    log(f"temp dir {a.work}; time budget {a.time_budget} s")

    def workloads():
        c.start()
        c.small("PUT")
        c.small("GET")
        if a.big and {"sqlite", "ceph"} & set(a.setups):
            c.big("PUT")
            c.big("GET")
        return report(a, c, time.monotonic() - t_start)
    text = harness.guarded(workloads, c.stop, log)
    harness.publish(text, a.out, t_start, log)


if __name__ == "__main__":
    main()

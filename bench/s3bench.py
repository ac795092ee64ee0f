#!/usr/bin/env python3
"""S3 benchmark: blobd's S3 dialect against its own /v1 API and against Ceph RGW (radosgw).

Run by `make bench` (after bench/run) and `make bench-s3`, never by `make test`. Needs wrk, curl,
boto3 and the Ceph packages (tools/ceph-local.sh installs the ones it misses).

Three targets on 127.0.0.1, every workload run against them in turn (A,B,C,A,B,C; medians):
  A blobd-v1  /v1/blobs/bench/KEY with a bearer token
  B blobd-S3  blobd's S3 listener, boto3 presigned URLs (SigV4, UNSIGNED-PAYLOAD, path style)
  C RGW-S3    radosgw (beast, tcp_nodelay) of a one-node Ceph cluster (tools/ceph-local.sh)
One client for all: curl for the 1 GiB PutObject / GetObject, wrk with s3_urls.lua (a file of
request targets; every answer outside 2xx is counted) for 4 KiB objects at 16 connections. Both
servers run with their per-request logs off (blobd --log-level warning, radosgw debug_rgw 0/0).
Report: bench/results/s3.md. blobd is stopped by PID, the cluster by `ceph-local.sh stop`; every
wait is bounded, and the whole run by --time-budget.
"""

import argparse, glob, hashlib, hmac, json, os, re, shlex, shutil, statistics, subprocess, sys, tempfile, time, urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import harness  # noqa: E402
from harness import BenchError, Meter, left, logger, run  # noqa: E402
from bench import GiB, KiB, MiB, free_port, parse_size, proc_cpu_ticks  # noqa: E402

BUCKET, SMALL, CONNS = "bench", 4 * KiB, 16
TARGETS = ("blobd-v1", "blobd-S3", "RGW-S3")
GOALS = {"get": 0.95, "put": 0.85}  # blobd S3 / blobd /v1; blobd S3 / RGW must be > 1
CEPH_LOCAL = os.path.join(REPO, "tools", "ceph-local.sh")
OURS = {os.getpid()}  # blobd and the Ceph daemons join: every other process's CPU is "foreign"


log = logger("s3bench")


class Target:
    def __init__(self, name, base, cpu_parts, s3=None, bearer=None, keys=None):
        self.name, self.base, self.cpu_parts, self.s3, self.keys = name, base, cpu_parts, s3, keys
        self.headers = ["-H", f"Authorization: Bearer {bearer}"] if bearer else []

    def url(self, method, key, expires=3600):
        if self.s3 is None:
            return f"{self.base}/v1/blobs/{BUCKET}/{key}"
        op = "put_object" if method == "PUT" else "get_object"
        return self.s3.generate_presigned_url(op, Params={"Bucket": BUCKET, "Key": key}, ExpiresIn=expires)

    def presigned_get(self, key, expires, stamp):
        """A presigned GET's request target, signed here as boto3 signs it (SigV4 query auth, host
        only, UNSIGNED-PAYLOAD), 40 times faster than boto3 (which takes about 0.8 ms a URL)."""
        access, secret = self.keys
        date = stamp[:8]
        scope = f"{date}/us-east-1/s3/aws4_request"
        path = f"/{BUCKET}/" + urllib.parse.quote(key, safe="/~")
        query = urllib.parse.urlencode([("X-Amz-Algorithm", "AWS4-HMAC-SHA256"), ("X-Amz-Credential", f"{access}/{scope}"),
                                        ("X-Amz-Date", stamp), ("X-Amz-Expires", str(expires)), ("X-Amz-SignedHeaders", "host")],
                                       quote_via=urllib.parse.quote, safe="-_.~")
        canonical = "\n".join(["GET", path, query, f"host:{urllib.parse.urlparse(self.base).netloc}", "", "host", "UNSIGNED-PAYLOAD"])
        to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
        k = ("AWS4" + secret).encode()
        for part in (date, "us-east-1", "s3", "aws4_request"):
            k = hmac.new(k, part.encode(), hashlib.sha256).digest()
        return f"{path}?{query}&X-Amz-Signature={hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()}"

    def url_file(self, path, method, keys, fresh=False):
        """`fresh` (GET): every URL signed with its own expiry (3600 s + its index), so no two are alike."""
        with open(path, "w") as f:  # request targets only: wrk sends the Host of the URL it is given
            if fresh:
                stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
                f.writelines(self.presigned_get(k, 3600 + i, stamp) + "\n" for i, k in enumerate(keys))
            else:
                f.writelines(self.url(method, k)[len(self.base):] + "\n" for k in keys)
        return path


def s3_client(endpoint, access_key, secret_key):
    import boto3
    from botocore.config import Config
    cfg = Config(signature_version="s3v4", s3={"addressing_style": "path"}, connect_timeout=5, read_timeout=60,
                 retries={"max_attempts": 1}, request_checksum_calculation="when_required")
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=access_key,
                        aws_secret_access_key=secret_key, region_name="us-east-1", config=cfg)


def curl(target, args, want):
    """One curl request with the target's headers: (HTTP code, bytes up, bytes down, seconds, message)."""
    return harness.curl(target.headers + args, want)


def sha256_of_get(target, url):
    p = run(["bash", "-o", "pipefail", "-c", 'curl -sSf --max-time 120 "$@" | sha256sum', "-"] + target.headers + [url], 130)
    return p.returncode, (p.stdout.split() or ["?"])[0]


class S3Bench:
    def __init__(self, a, work):
        self.a, self.work, self.ceph = a, work, os.path.join(work, "ceph")
        self.samples, self.notes, self.info, self.logs = {}, [], {}, {}  # logs: name -> (path, offset)
        self.blobd = None

    def start_blobd(self):
        p1, p2 = free_port(), free_port()
        tokens, path = os.path.join(self.work, "tokens"), os.path.join(self.work, "blobd.stderr.log")
        with open(os.open(tokens, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write("s3 BENCHKEY BENCHSECRET read,write,delete\nbenchtoken read,write,delete\n")
        with open(path, "wb") as err:
            self.blobd = subprocess.Popen(
                [self.a.blobd, "--data-dir", os.path.join(self.work, "blobd-data"), "--listen", f"127.0.0.1:{p1}",
                 "--s3-listen", f"127.0.0.1:{p2}", "--tokens-file", tokens, "--log-level", "warning"],
                stdin=subprocess.DEVNULL, stdout=err, stderr=err, start_new_session=True)
        for _ in range(200):  # 20 s
            text = open(path, "rb").read()
            if b"blobd listening on" in text and b"blobd S3 listening on" in text:
                self.logs["blobd"] = (path, len(text))
                return f"http://127.0.0.1:{p1}", f"http://127.0.0.1:{p2}"
            if self.blobd.poll() is not None:
                break
            time.sleep(0.1)
        raise BenchError(f"blobd did not start: {open(path, errors='replace').read()[-500:]}")

    def ceph_cpu(self):
        parts = {}
        for pid in open(os.path.join(self.ceph, "pids")).read().split():
            try:
                comm = open(f"/proc/{pid}/comm").read().strip()
            except OSError:
                continue
            parts[comm] = parts.get(comm, 0) + proc_cpu_ticks(int(pid))
            OURS.add(int(pid))
        return parts

    def start_rgw(self):
        t0 = time.monotonic()
        p = run([CEPH_LOCAL, "start", self.ceph, "--rgw"], want=240)
        if p.returncode != 0:
            raise BenchError(f"tools/ceph-local.sh start failed:\n{p.stderr[-2000:]}")
        env = dict(shlex.split(x)[0].split("=", 1) for x in p.stdout.splitlines() if "=" in x)
        log(f"Ceph cluster with radosgw up in {time.monotonic() - t0:.0f} s at {env['RGW_ENDPOINT']}")
        asok = glob.glob(os.path.join(self.ceph, "run", "client.rgw.a.*.asok")) or ["?"]
        adm = ["ceph", "--admin-daemon", asok[0], "config"]
        q = run(adm + ["set", "debug_rgw", "0/0"], want=20)
        if q.returncode != 0:
            self.notes.append(f"could not turn radosgw's request log off: {q.stderr.strip()[:200]}")
        try:
            self.info["radosgw frontends"] = json.loads(run(adm + ["get", "rgw_frontends"], want=20).stdout)["rgw_frontends"]
        except (ValueError, KeyError):
            self.info["radosgw frontends"] = "?"
        if "tcp_nodelay=1" not in self.info["radosgw frontends"]:
            self.notes.append(f"radosgw runs without tcp_nodelay=1 ({self.info['radosgw frontends']})")
        self.ceph_cpu()  # its daemons join OURS
        path = os.path.join(self.ceph, "log", "client.rgw.a.log")
        self.logs["radosgw"] = (path, os.path.getsize(path))
        return env

    def error_lines(self):
        out = []
        for name, (path, offset) in self.logs.items():
            try:
                with open(path, "rb") as f:
                    f.seek(offset)
                    lines = f.read().decode(errors="replace").splitlines()
            except OSError:
                continue
            bad = [x for x in lines if name == "blobd" or re.search(r"error|fail", x, re.I)]
            if bad:
                why = " (-104 ECONNRESET / -32 EPIPE: wrk drops its connections when its time is up)" \
                    if all(re.search(r"failed with -(104|32)$", x) for x in bad) else ""
                out.append(f"{name} logged {len(bad)} error lines{why}, e.g.: " + " / ".join(x[:200] for x in bad[:3]))
        return out

    def setup(self):
        a = self.a
        v1, s3 = self.start_blobd()
        log(f"blobd pid {self.blobd.pid}: /v1 on {v1}, S3 on {s3}")
        OURS.add(self.blobd.pid)
        env = self.start_rgw()
        blobd_cpu = lambda: {"blobd": proc_cpu_ticks(self.blobd.pid)}  # noqa: E731
        bs3 = s3_client(s3, "BENCHKEY", "BENCHSECRET")
        rs3 = s3_client(env["RGW_ENDPOINT"], env["RGW_ACCESS_KEY"], env["RGW_SECRET_KEY"])
        self.targets = [Target("blobd-v1", v1, blobd_cpu, bearer="benchtoken"),
                        Target("blobd-S3", s3, blobd_cpu, s3=bs3, keys=("BENCHKEY", "BENCHSECRET")),
                        Target("RGW-S3", env["RGW_ENDPOINT"], self.ceph_cpu, s3=rs3, keys=(env["RGW_ACCESS_KEY"], env["RGW_SECRET_KEY"]))]
        for c in (bs3, rs3):
            c.create_bucket(Bucket=BUCKET)
        put_url = self.targets[1].url("PUT", "x")
        if "X-Amz-SignedHeaders=host&" not in put_url or "content-sha256" in put_url.lower():
            raise BenchError(f"the presigned PUT URL signs more than the host: {put_url}")
        # One random big file (hashed as it is written) and one small body.
        self.src, h, chunk = os.path.join(self.work, "big.bin"), hashlib.sha256(), os.urandom(64 * MiB)
        with open(self.src, "wb") as f:
            for off in range(0, a.big, len(chunk)):  # bounded: big / 64 MiB iterations
                f.write(chunk[:a.big - off])
                h.update(chunk[:a.big - off])
        self.src_sha = h.hexdigest()
        small, small_path, got = os.urandom(SMALL), os.path.join(self.work, "small.bin"), os.path.join(self.work, "got")
        open(small_path, "wb").write(small)
        for t in self.targets:  # smoke: curl -T with the URL as it is (no extra headers), GET back, same bytes
            code, *_, err = curl(t, ["-T", small_path, t.url("PUT", f"smoke-{t.name}")], 20)
            code2 = run(["curl", "-sS", "-o", got, "-w", "%{http_code}"] + t.headers + [t.url("GET", f"smoke-{t.name}")]).stdout
            if code not in (200, 201) or code2 != "200" or open(got, "rb").read() != small:
                raise BenchError(f"{t.name}: smoke PUT answered {code} ({err}), GET {code2} or other bytes")
        for c in (bs3, rs3):  # what the small GETs read (blobd-v1 and blobd-S3 the same objects)
            for i in range(a.get_keys):
                left(20)
                c.put_object(Bucket=BUCKET, Key=f"get-small/{i:04d}", Body=small)  # raises unless 2xx
        self.url_files = {t.name: {
            "put": t.url_file(os.path.join(self.work, f"{t.name}-put.urls"), "PUT",
                              [f"put-small-{t.name}/{i:05d}" for i in range(a.put_keys)]),
            "get": t.url_file(os.path.join(self.work, f"{t.name}-get.urls"), "GET",
                              [f"get-small/{i:04d}" for i in range(a.get_keys)])} for t in self.targets}
        for t in self.targets:  # a URL per request: more than wrk sends in a run (/v1 has no URLs to vary)
            left(120)
            self.url_files[t.name]["get_fresh"] = self.url_files[t.name]["get"] if t.s3 is None else t.url_file(
                os.path.join(self.work, f"{t.name}-get-fresh.urls"), "GET",
                [f"get-small/{i % a.get_keys:04d}" for i in range(a.fresh_urls)], fresh=True)
            first = open(self.url_files[t.name]["get_fresh"]).readline().strip()
            code = run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}"] + t.headers + [t.base + first]).stdout
            if code != "200":
                raise BenchError(f"{t.name}: a fresh presigned GET answered {code}")
        log(f"set up: {a.big / MiB:g} MiB source (sha256 {self.src_sha[:12]}…), {a.get_keys} objects of "
            f"{SMALL} B on each server, {a.put_keys} PUT URLs per target")

    # -- workloads

    def record(self, workload, target, m, **values):
        values.update(server_cpu_s=m.server_cpu, client_cpu_s=m.client_cpu, steal_pct=m.steal_pct,
                      foreign_cpu_pct=m.foreign_pct, cpu_parts=m.parts)
        self.samples.setdefault((workload, target.name), []).append(values)
        if m.steal_pct > 10 or m.foreign_pct > 15:
            self.notes.append(f"{workload} {target.name}: hypervisor steal {m.steal_pct:.0f}% of all CPU time, other "
                              f"processes {m.foreign_pct:.0f}% of a core ({m.foreign_top})")

    def rounds(self):
        return [(r, t) for r in range(1, self.a.rounds + 1) for t in self.targets]

    def prepare_write(self):
        run(["sync"], want=120)  # earlier dirty pages are not flushed inside the measurement
        if self.a.touch_gib > 0:
            run([sys.executable, os.path.join(HERE, "touchmem.py"), str(self.a.touch_gib)], want=120)

    def big(self, method):
        """PUT: one `curl -T` of the big file to a fresh key per run. GET: --get-repeats downloads of
        the last round's key back to back; MB/s = bytes over the transfers' total time."""
        a, n = self.a, 1 if method == "PUT" else self.a.get_repeats
        for r, t in self.rounds():
            if method == "PUT":
                self.prepare_write()
            args = ["-T", self.src, t.url("PUT", f"big-{t.name}-r{r}")] if method == "PUT" else \
                   [t.url("GET", f"big-{t.name}-r{a.rounds}")]
            with Meter(t.cpu_parts, lambda: OURS) as m:
                res = [curl(t, args, 300) for _ in range(n)]
            moved, secs = sum(x[1] if method == "PUT" else x[2] for x in res), sum(x[3] for x in res)
            codes, ok = [x[0] for x in res], moved == n * a.big and all(x[0] in (200, 201) for x in res)
            self.record(f"big_{method.lower()}", t, m, mbps=moved / max(secs, 1e-9) / 1e6, secs=secs, status=codes,
                        ok=ok, cpu_s_per_gib=m.server_cpu / (n * a.big / GiB))
            if not ok:
                self.notes.append(f"{method} {a.big} B {t.name} r{r}: HTTP {codes}, {moved} B moved: {res[-1][4]}")
            log(f"{method} {a.big / MiB:g} MiB r{r} {t.name:8} {moved / max(secs, 1e-9) / 1e6:7.0f} MB/s  HTTP {codes}  "
                f"server cpu {m.server_cpu:.2f} s  steal {m.steal_pct:.0f}%")
        if method == "GET":  # one more GET per target, its bytes against the source's sha256
            for t in self.targets:
                code, sha = sha256_of_get(t, t.url("GET", f"big-{t.name}-r{a.rounds}"))
                same = code == 0 and sha == self.src_sha
                self.info[f"sha256 of a big GET from {t.name}"] = "matches" if same else f"MISMATCH (exit {code}, {sha})"
                if not same:
                    self.notes.append(f"{t.name}: the big GET's bytes differ from the source")

    def wrk(self, method, urls=None):
        """`urls`: which URL file (default: the method's)."""
        a, urls = self.a, urls or method.lower()
        workload = f"small_{urls}"
        for r, t in self.rounds():
            if method == "PUT":
                self.prepare_write()
            argv = ["wrk", "-t", "2", "-c", str(CONNS), "-d", f"{a.duration}s", "--timeout", "5s", "-s", "s3_urls.lua"] \
                + t.headers + [t.base, "--", self.url_files[t.name][urls], method, str(SMALL)]
            with Meter(t.cpu_parts, lambda: OURS) as m:
                p = run(argv, want=a.duration + 40, cwd=HERE)
            s = re.search(r"^BENCH (.*)$", p.stdout, re.M)
            if not s:
                raise BenchError(f"{t.name}: no summary from wrk:\n{p.stdout[-1000:]}\n{p.stderr[-1000:]}")
            w = {k: int(v) for k, v in (kv.split("=") for kv in s.group(1).split())}
            secs, errors, good = w["duration_us"] / 1e6, w["connect"] + w["read"] + w["write"] + w["timeout"], \
                w["requests"] - w["non2xx"]
            self.record(workload, t, m, rps=good / secs, requests=w["requests"], non2xx=w["non2xx"], socket_errors=errors,
                        ok=w["non2xx"] == 0 and errors == 0, p50_ms=w["p50_us"] / 1000, p99_ms=w["p99_us"] / 1000,
                        cpu_us_per_req=1e6 * m.server_cpu / max(good, 1))
            if w["non2xx"] or errors:
                self.notes.append(f"{workload} {t.name} r{r}: {w['non2xx']} non-2xx answers and {errors} socket "
                                  f"errors of {w['requests']}: {p.stderr.strip()[:300]}")
            log(f"{workload} r{r} {t.name:8} {good / secs:7.0f} req/s  p50 {w['p50_us'] / 1000:.2f} ms  p99 "
                f"{w['p99_us'] / 1000:.2f} ms  non-2xx {w['non2xx']}  server cpu {m.server_cpu:.2f} s  steal {m.steal_pct:.0f}%")

    # -- report

    def med(self, workload, name, field):
        xs = [x[field] for x in self.samples.get((workload, name), [])]
        return statistics.median(xs) if xs else None

    def valid(self, workload, *names):
        return all(x["ok"] for n in names for x in self.samples.get((workload, n), []))

    def table(self):
        a = self.a
        size = f"{a.big / GiB:g} GiB" if a.big >= GiB else f"{a.big / MiB:g} MiB"
        rows = [("big_put", f"PutObject {size} (curl -T, until the 200), MB/s", "mbps", "cpu_s_per_gib", "cpu s/GiB", "put"),
                ("big_get", f"GetObject {size} (curl, {a.get_repeats}× per run), MB/s", "mbps", "cpu_s_per_gib", "cpu s/GiB", "get"),
                ("small_put", f"PutObject {SMALL // KiB} KiB, {CONNS} conns, req/s", "rps", "cpu_us_per_req", "µs cpu/req", "put"),
                ("small_get", f"GetObject {SMALL // KiB} KiB, {CONNS} conns, req/s", "rps", "cpu_us_per_req", "µs cpu/req", "get"),
                ("small_get_fresh", f"GetObject {SMALL // KiB} KiB, {CONNS} conns, a new presigned URL per request, req/s",
                 "rps", "cpu_us_per_req", "µs cpu/req", "get")]
        out = ["| workload | " + " | ".join(TARGETS) + " | blobd S3 / blobd /v1 | blobd S3 / RGW |", "|---" * 6 + "|"]

        def verdict(x, y, goal, strict, valid):
            if not x or not y:
                return "–"
            met = x / y > goal if strict else x / y >= goal
            return f"{x / y:.2f} (goal {'>' if strict else '≥'} {goal:g}: {'met' if met else 'MISSED'}" \
                   + ("" if valid else "; INVALID: non-2xx answers") + ")"

        for wl, label, field, cpu, unit, kind in rows:
            v = {n: self.med(wl, n, field) for n in TARGETS}
            cells = ["–" if v[n] is None else f"{v[n]:,.0f} ({self.med(wl, n, cpu):.{2 if 's/' in unit else 0}f} {unit})"
                     + ("" if self.valid(wl, n) else " INVALID") for n in TARGETS]
            r1 = verdict(v["blobd-S3"], v["blobd-v1"], GOALS[kind], False, self.valid(wl, "blobd-S3", "blobd-v1"))
            r2 = verdict(v["blobd-S3"], v["RGW-S3"], 1, True, self.valid(wl, "blobd-S3", "RGW-S3"))
            out.append(f"| {label} | " + " | ".join(cells) + f" | {r1} | {r2} |")
            if field == "rps":
                lat = ["–" if v[n] is None else f"{self.med(wl, n, 'p50_ms'):.2f} / {self.med(wl, n, 'p99_ms'):.2f}"
                       for n in TARGETS]
                out.append("| ↳ latency p50 / p99, ms | " + " | ".join(lat) + " | | |")
        return "\n".join(out)

    def details(self):
        out, common = [], ["server_cpu_s", "client_cpu_s", "steal_pct", "foreign_cpu_pct"]
        for wl, fields in (("big_put", ["mbps", "secs", "status"]), ("big_get", ["mbps", "secs", "status"]),
                           ("small_put", ["rps", "requests", "non2xx", "socket_errors", "p50_ms", "p99_ms"]),
                           ("small_get", ["rps", "requests", "non2xx", "socket_errors", "p50_ms", "p99_ms"]),
                           ("small_get_fresh", ["rps", "requests", "non2xx", "socket_errors", "p50_ms", "p99_ms"])):
            out.append(f"- **{wl}**")
            for n in TARGETS:
                runs = self.samples.get((wl, n), [])
                parts = [f"{f} " + "/".join(f"{x[f]:.4g}" if isinstance(x[f], float) else str(x[f]) for x in runs)
                         for f in fields + common]
                if n == "RGW-S3" and runs:
                    parts += [f"{p} cpu_s " + "/".join(f"{x['cpu_parts'].get(p, 0):.2f}" for x in runs)
                              for p in ("radosgw", "ceph-osd")]
                out.append(f"  - {n}: " + ", ".join(parts))
        return "\n".join(out)


def versions(a):
    def first(argv):
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=10)
            return ((p.stdout + p.stderr).strip().splitlines() or [""])[0]
        except (OSError, subprocess.TimeoutExpired):
            return "?"
    import boto3
    head = first(["git", "-C", REPO, "rev-parse", "--short", "HEAD"])
    dirty = first(["git", "-C", REPO, "status", "--porcelain", "--", "Sources", "Package.swift"]) not in ("", "?")
    built = time.strftime("%Y-%m-%d %H:%M", time.localtime(os.stat(a.blobd).st_mtime))
    return [f"blobd {a.blobd} built {built}, repo HEAD {head}" + (" (Sources/ has uncommitted changes)" if dirty else ""),
            f"radosgw: {first(['radosgw', '--version'])}", first(["wrk", "-v"]), first(["curl", "--version"]),
            f"boto3 {boto3.__version__}", f"kernel {os.uname().release}, {os.cpu_count()} cores"]


def report(a, b, total):
    all_2xx = all(b.valid(wl, *TARGETS) for wl in ("big_put", "big_get", "small_put", "small_get", "small_get_fresh"))
    odd = b.notes + b.error_lines() + ([] if b.blobd.poll() is None else [f"blobd exited (code {b.blobd.returncode})"])
    return "\n".join([
        f"# blobd S3 benchmark — {time.strftime('%Y-%m-%d %H:%M:%S %Z')}", "", b.table(), "",
        f"Medians of {a.rounds} runs per target, run in turn ({', '.join(TARGETS)}, repeated); total time {total:.0f} s. "
        "MB/s = 10^6 B/s, bytes over curl's total time (its speed_upload / speed_download); a PUT's time ends with "
        "the server's 200, after blobd's fsync and RGW's OSD write. wrk: 2 threads, "
        f"{CONNS} connections, {a.duration} s per run, req/s counts 2xx answers only; the 4 KiB PUTs cycle over "
        f"{a.put_keys} keys per target (overwrites), the GETs over {a.get_keys} objects uploaded first (blobd-v1 and "
        "blobd-S3 read the same ones). S3 requests are boto3 presigned URLs (SigV4 query auth, UNSIGNED-PAYLOAD, "
        "path style, 1 h expiry) sent as they are; /v1 requests carry a bearer token. The GETs repeat one URL per "
        "object, as a media player's range requests or a shared link do; blobd verifies a repeated presigned URL "
        "once (VerifiedURLs). The fresh-URL GETs sign every URL with its own expiry "
        f"({a.fresh_urls} URLs, more than a run sends), so every one is verified in full; /v1 repeats its GETs. Server CPU = utime+stime "
        "deltas from /proc/PID/stat: blobd's process; for RGW every daemon of the cluster (radosgw, ceph-osd, "
        "ceph-mon, ceph-mds). Steal = hypervisor steal as a share of all CPU time (/proc/stat). Client and servers "
        f"share the machine's {os.cpu_count()} cores; both servers run with their per-request logs off.", "",
        "Goals: blobd S3 / blobd /v1 ≥ 0.95 for GETs and ≥ 0.85 for PUTs (UNSIGNED-PAYLOAD); blobd S3 / RGW > 1.", "",
        "Versions: " + "; ".join(versions(a)) + ".", "",
        "Checks: " + ("every response was 2xx (curl's codes, s3_urls.lua's count of every wrk answer)" if all_2xx
                      else "SOME RUNS HAD NON-2xx ANSWERS OR SOCKET ERRORS (marked INVALID)")
        + "; " + "; ".join(f"{k}: {v}" for k, v in b.info.items()) + ".", "",
        "Anomalies:" + ("" if odd else " none")] + [f"- {x}" for x in odd] + [
        "", "Per-run values (run 1/run 2/...; CPU in seconds, steal in % of all CPU time):", "", b.details(), ""])


def main():
    ap = argparse.ArgumentParser(description="blobd S3 vs blobd /v1 vs Ceph RGW (see bench/README.md)")
    harness.add_common_arguments(ap, REPO, "target", "s3.md", time_budget=600)
    ap.add_argument("--big", type=parse_size, default=GiB, help="size of the big object (default 1G)")
    ap.add_argument("--get-repeats", type=int, default=3, help="big GETs per run (one takes ~0.5 s on blobd)")
    ap.add_argument("--put-keys", type=int, default=2000, help="presigned PUT URLs per target that wrk cycles over")
    ap.add_argument("--get-keys", type=int, default=200, help="objects the small GETs cycle over")
    ap.add_argument("--fresh-urls", type=int, default=150_000, help="distinct presigned URLs of the fresh-URL GETs")
    a = ap.parse_args()
    if a.quick:
        a.rounds, a.duration, a.big, a.get_repeats, a.put_keys, a.get_keys, a.touch_gib = 1, 2, 64 * MiB, 1, 200, 20, 0
        a.fresh_urls = 2000
    if a.out is None:
        a.out = "" if a.quick else os.path.join(HERE, "results", "s3.md")
    t_start = time.monotonic()
    harness.set_budget(a.time_budget)
    missing = [x for x in ("wrk", "curl") if shutil.which(x) is None]
    if missing or not os.access(a.blobd, os.X_OK):
        sys.exit(f"s3bench: missing {' '.join(missing) or a.blobd} (make bench-deps; make release)")
    if a.big * a.rounds > 6 * GiB:
        sys.exit("s3bench: --big × --rounds must stay under 6 GiB (the Ceph OSD is an 8 GiB file)")
    if shutil.disk_usage(a.tmpdir).free < a.big * (1 + 3 * a.rounds) + 2 * GiB:
        sys.exit(f"s3bench: needs {(a.big * (1 + 3 * a.rounds) + 2 * GiB) / GiB:.1f} GiB free in {a.tmpdir}")

    harness.interrupt_on_signals()
    work = tempfile.mkdtemp(prefix="blobd-s3bench.", dir=a.tmpdir)
    log(f"temp dir {work}; time budget {a.time_budget} s")
    b = S3Bench(a, work)

    def workloads():
        b.setup()
        b.big("PUT")
        b.big("GET")
        b.wrk("PUT")
        b.wrk("GET")
        b.wrk("GET", "get_fresh")
        return report(a, b, time.monotonic() - t_start)  # reads the servers' logs: before they go

    def cleanup():
        harness.stop(b.blobd)
        if os.path.exists(b.ceph):
            try:
                subprocess.run([CEPH_LOCAL, "stop", b.ceph], stdin=subprocess.DEVNULL, timeout=60)
            except subprocess.TimeoutExpired:
                log(f"tools/ceph-local.sh stop {b.ceph} timed out")
        shutil.rmtree(work, ignore_errors=True)
        log(f"stopped blobd and the Ceph cluster, removed {work}")
    text = harness.guarded(workloads, cleanup, log)
    harness.publish(text, a.out, t_start, log)


if __name__ == "__main__":
    main()

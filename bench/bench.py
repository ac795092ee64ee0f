#!/usr/bin/env python3
"""blobd benchmark: blobd against nginx and lighttpd on identical requests.

Run by `make bench` (through bench/run), never by `make test`. Python 3 standard library only.

It starts, on 127.0.0.1 and inside one temp directory:
  A  nginx     generated config: dav_methods PUT DELETE, create_full_put_path, sendfile,
               client_max_body_size 0, 2 workers, access log off, body temp on the same file system
  B  lighttpd  mod_webdav with PUT/DELETE, a temp document root, upload dirs on the same file system
  C  blobd     the release build, a temp data dir
all serving /v1/blobs/{key}, so every workload sends the same requests to each. Every workload
runs against the servers in turn (A,B,C,A,B,C); the table shows medians and blobd's ratios.

Machine facts it works around (2-core VM, client and server share the cores):
  - memory left free for ~2 s goes back to the host and is ~10x slower to touch again, so
    touchmem.py touches ~3 GiB right before every timed upload;
  - `sync` before every write workload, so earlier dirty pages are not flushed inside it;
  - ext4 without a journal is slow to create files for minutes after ~10^5 deletions, so every
    run writes fresh keys and nothing is deleted before the very end;
  - nginx keeps `tcp_nopush` off (40 ms stalls per 64 KiB range on loopback).
Servers are stopped by PID; every loop is bounded in count and time.
"""

import argparse
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
CLK_TCK = os.sysconf("SC_CLK_TCK")

# Targets: blobd / nginx (for upload: blobd / (nginx + sync)); RSS in MiB.
TARGETS = {
    "upload_sync": 0.85,
    "download": 0.95,
    "ranged": 0.8,
    "put_small": 0.35,
    "get_small": 0.7,
    "rss_mib": 32,
}


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class BenchError(Exception):
    pass


# --------------------------------------------------------------------------------------------
# /proc helpers


def proc_cpu_ticks(pid):
    """utime + stime of a process (all its threads), in clock ticks; 0 if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
        return int(rest[11]) + int(rest[12])
    except (OSError, IndexError, ValueError):
        return 0


def proc_status_kib(pid, field):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def children_of(pid):
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                rest = f.read().rsplit(")", 1)[1].split()
            if int(rest[1]) == pid:
                out.append(int(name))
        except (OSError, IndexError, ValueError):
            continue
    return out


def machine_ticks():
    """(busy, softirq, steal) CPU ticks of the whole machine (all cores), from /proc/stat.
    Loopback TCP work mostly runs as softirq and is in no process's utime/stime."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v[:8]) - v[3] - v[4], v[6], v[7]  # user..steal minus idle and iowait


def user_process_ticks():
    """pid -> (name, utime+stime ticks) of every user-space process (no kernel threads)."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                text = f.read()
            rest = text.rsplit(")", 1)[1].split()
            if name == "2" or rest[1] == "2":
                continue
            out[int(name)] = (text[text.index("(") + 1:text.rindex(")")], int(rest[11]) + int(rest[12]))
        except (OSError, IndexError, ValueError):
            continue
    return out


class Meter:
    """Over one measurement: the server's CPU, the machine's softirq and steal time, and the
    CPU of foreign processes (anything but the server and this harness's own children), so a
    concurrent build or test run shows up next to the numbers it spoils."""

    def __init__(self, server):
        self.server = server

    def __enter__(self):
        self.t0 = time.monotonic()
        self.p0 = user_process_ticks()
        self.m0 = machine_ticks()
        self.s0 = self.server.cpu_ticks()
        return self

    def __exit__(self, *exc):
        self.server_cpu = (self.server.cpu_ticks() - self.s0) / CLK_TCK
        m1 = machine_ticks()
        p1 = user_process_ticks()
        self.secs = time.monotonic() - self.t0
        _, self.softirq, self.steal = ((y - x) / CLK_TCK for x, y in zip(self.m0, m1))
        mine = set(self.server.pids()) | {os.getpid()}
        foreign = {}
        for pid, (name, ticks) in p1.items():
            if pid in mine:
                continue
            d = ticks - self.p0[pid][1] if pid in self.p0 else ticks
            if d > 0:
                foreign[name] = foreign.get(name, 0) + d / CLK_TCK
        self.foreign = sum(foreign.values())
        self.foreign_top = sorted(foreign.items(), key=lambda kv: -kv[1])[:3]
        return False

    def pct(self, secs):
        return 100 * secs / max(self.secs, 1e-9)

    def foreign_text(self):
        return ", ".join(f"{n} {self.pct(c):.0f}%" for n, c in self.foreign_top)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False


# --------------------------------------------------------------------------------------------
# Servers


class Server:
    name = "?"
    log_path = None

    def __init__(self, work):
        self.work = work
        self.proc = None
        self.port = None

    @property
    def base(self):
        return f"http://127.0.0.1:{self.port}"

    def url(self, key):
        return f"{self.base}/v1/blobs/{key}"

    def pids(self):
        """Every process serving requests (nginx: master and workers)."""
        if self.proc is None or self.proc.poll() is not None:
            return []
        return [self.proc.pid]

    def cpu_ticks(self):
        return sum(proc_cpu_ticks(p) for p in self.pids())

    def hwm_kib(self):
        """Peak RSS (VmHWM); for several processes the sum of their peaks."""
        return sum(proc_status_kib(p, "VmHWM") for p in self.pids())

    def rss_kib(self):
        return sum(proc_status_kib(p, "VmRSS") for p in self.pids())

    def prepare_prefix(self, prefix):
        """Make PUT /v1/blobs/PREFIX/name possible (only lighttpd needs the folder)."""

    def _spawn(self, argv, stderr_path):
        self.stderr_file = open(stderr_path, "wb")
        # Own session: a Ctrl-C in the terminal reaches only the harness, which then stops
        # the servers itself, by PID, in `finally`.
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.stderr_file,
                                     stderr=self.stderr_file, start_new_session=True)

    def stop(self, grace=12.0):
        if self.proc is None:
            return
        extra = [p for p in self.pids() if p != self.proc.pid]
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                log(f"{self.name} (pid {self.proc.pid}) ignored SIGTERM for {grace} s; SIGKILL")
                self.proc.kill()
                self.proc.wait(timeout=5)
        for pid in extra:  # nginx workers left behind by a killed master
            if os.path.exists(f"/proc/{pid}"):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self.stderr_file.close()

    def _log_paths(self):
        return list(dict.fromkeys(filter(None, [self.log_path, getattr(self, "stderr_path", None)])))

    def mark_started(self):
        """Remember where the logs end once started: start-up notices (blobd's "no tokens file",
        lighttpd's "server started") are not anomalies of the run."""
        self.log_offsets = {}
        for path in self._log_paths():
            try:
                self.log_offsets[path] = os.path.getsize(path)
            except OSError:
                pass

    def error_lines(self, limit=8):
        """Lines the server logged after start-up that look like errors (for the report)."""
        lines = []
        for path in self._log_paths():
            try:
                with open(path, "rb") as fb:
                    fb.seek(getattr(self, "log_offsets", {}).get(path, 0))
                    text = fb.read().decode(errors="replace")
                for line in text.splitlines():
                    if re.search(r"\b(error|crit|alert|emerg|fatal|critical|warning)\b", line, re.I):
                        lines.append(line.rstrip()[:300])
            except OSError:
                pass
        return len(lines), lines[:limit]


class Nginx(Server):
    name = "nginx"

    def __init__(self, work, access_log=False):
        super().__init__(work)
        self.access_log = access_log
        self.prefix = os.path.join(work, "nginx")
        self.root = os.path.join(self.prefix, "root")
        self.log_path = os.path.join(self.prefix, "error.log")
        self.stderr_path = os.path.join(self.prefix, "stderr.log")

    def start(self):
        p = self.prefix
        for d in ("root/v1/blobs", "body", "proxy", "fastcgi", "uwsgi", "scgi"):
            os.makedirs(os.path.join(p, d), exist_ok=True)
        self.port = free_port()
        user = "user root root;\n" if os.geteuid() == 0 else ""
        # nginx's default access log (combined format, written per request) when asked for.
        access_log = f"access_log {p}/access.log;" if self.access_log else "access_log off;"
        conf = f"""{user}worker_processes 2;
pid {p}/nginx.pid;
error_log {p}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    {access_log}
    sendfile on;
    tcp_nopush off;
    keepalive_requests 1000000;
    default_type application/octet-stream;
    client_body_temp_path {p}/body;
    proxy_temp_path {p}/proxy;
    fastcgi_temp_path {p}/fastcgi;
    uwsgi_temp_path {p}/uwsgi;
    scgi_temp_path {p}/scgi;
    server {{
        listen 127.0.0.1:{self.port};
        root {self.root};
        location /v1/blobs/ {{
            dav_methods PUT DELETE;
            create_full_put_path on;
            client_max_body_size 0;
        }}
    }}
}}
"""
        conf_path = os.path.join(p, "nginx.conf")
        with open(conf_path, "w") as f:
            f.write(conf)
        self._spawn(["nginx", "-e", self.log_path, "-p", p, "-c", conf_path, "-g", "daemon off;"],
                    self.stderr_path)
        if not wait_port(self.port, self.proc):
            raise BenchError(f"nginx did not start; see {self.log_path}")
        deadline = time.monotonic() + 10
        while len(children_of(self.proc.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)

    def pids(self):
        if self.proc is None or self.proc.poll() is not None:
            return []
        return [self.proc.pid] + children_of(self.proc.pid)


class Lighttpd(Server):
    name = "lighttpd"

    def __init__(self, work):
        super().__init__(work)
        self.prefix = os.path.join(work, "lighttpd")
        self.root = os.path.join(self.prefix, "root")
        self.log_path = os.path.join(self.prefix, "error.log")
        self.stderr_path = os.path.join(self.prefix, "stderr.log")

    def start(self):
        p = self.prefix
        os.makedirs(os.path.join(self.root, "v1", "blobs"), exist_ok=True)
        os.makedirs(os.path.join(p, "upload"), exist_ok=True)
        self.port = free_port()
        conf = f"""server.modules = ("mod_webdav")
server.document-root = "{self.root}"
server.bind = "127.0.0.1"
server.port = {self.port}
server.errorlog = "{self.log_path}"
server.upload-dirs = ("{p}/upload")
server.max-keep-alive-requests = 1000000
server.max-request-size = 0
mimetype.assign = ("" => "application/octet-stream")
$HTTP["url"] =~ "^/v1/blobs/" {{
    webdav.activate = "enable"
    webdav.is-readonly = "disable"
}}
"""
        conf_path = os.path.join(p, "lighttpd.conf")
        with open(conf_path, "w") as f:
            f.write(conf)
        self._spawn(["lighttpd", "-D", "-f", conf_path], self.stderr_path)
        if not wait_port(self.port, self.proc):
            raise BenchError(f"lighttpd did not start; see {self.log_path}")

    def prepare_prefix(self, prefix):
        # WebDAV PUT answers 409 when the parent collection is missing.
        os.makedirs(os.path.join(self.root, "v1", "blobs", prefix), exist_ok=True)


class Blobd(Server):
    name = "blobd"

    def __init__(self, work, binary, threads, access_log=False, name="blobd"):
        super().__init__(work)
        self.name = name
        self.binary = binary
        self.threads = threads
        self.access_log = access_log
        self.data = os.path.join(work, f"{name}-data")
        self.stderr_path = os.path.join(work, f"{name}.stderr.log")

    def start(self):
        # The access log (blobd's default, one line per request to stderr, here a file) only
        # when asked for, as nginx and lighttpd run with theirs off otherwise.
        argv = [self.binary, "--data-dir", self.data, "--listen", "127.0.0.1:0"]
        if not self.access_log:
            argv += ["--log-level", "warning"]
        if self.threads:
            argv += ["--threads", str(self.threads)]
        self._spawn(argv, self.stderr_path)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with open(self.stderr_path, errors="replace") as f:
                m = re.search(r"blobd listening on http://127\.0\.0\.1:(\d+)", f.read())
            if m:
                self.port = int(m.group(1))
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise BenchError(f"blobd did not start; see {self.stderr_path}")


# --------------------------------------------------------------------------------------------
# Client side


class Client:
    def __init__(self, args, deadline):
        self.args = args
        self.deadline = deadline  # time.monotonic() by which every measurement must be done

    def budget(self, timeout):
        """`timeout`, cut to what is left of the run's time budget (so `make bench` stays
        under 10 minutes even when a server hangs)."""
        left = self.deadline - time.monotonic()
        if left < 1:
            raise BenchError(f"out of time: the run's budget of {self.args.time_budget} s is spent")
        return max(1, int(min(timeout, left)))

    def _rusage_children(self):
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    def run(self, argv, timeout, cwd=None, check=True):
        timeout = self.budget(timeout)
        c0 = self._rusage_children()
        try:
            p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                               timeout=timeout, cwd=cwd)
        except subprocess.TimeoutExpired:
            raise BenchError(f"timed out after {timeout} s: {' '.join(argv)}")
        self.last_cpu = self._rusage_children() - c0
        if check and p.returncode != 0:
            raise BenchError(f"exit {p.returncode}: {' '.join(argv)}\n{p.stderr.strip()[:2000]}")
        return p

    def sync(self):
        t0 = time.monotonic()
        self.run(["sync"], timeout=300)
        return time.monotonic() - t0

    def touch_memory(self):
        if self.args.touch_gib > 0:
            self.run([sys.executable, os.path.join(HERE, "touchmem.py"), str(self.args.touch_gib)],
                     timeout=120)

    def curl(self, extra, timeout=20):
        fmt = "%{http_code} %{size_upload} %{size_download} %{time_total}"
        timeout = self.budget(timeout)
        p = self.run(["curl", "-sS", "--max-time", str(timeout), "-o", "/dev/null", "-w", fmt] + extra,
                     timeout=timeout + 5)
        code, up, down, total = p.stdout.split()
        return int(code), int(float(up)), int(float(down)), float(total)

    def curl_sampled(self, extra, server, timeout=300, period=0.2):
        """curl while sampling the server's VmRSS every `period` s; returns (curl result, max KiB)."""
        fmt = "%{http_code} %{size_upload} %{size_download} %{time_total}"
        timeout = self.budget(timeout)
        argv = ["curl", "-sS", "--max-time", str(timeout), "-o", "/dev/null", "-w", fmt] + extra
        peak = server.rss_kib()
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + timeout + 5
            while p.poll() is None and time.monotonic() < deadline:  # bounded in time
                peak = max(peak, server.rss_kib())
                time.sleep(period)
            if p.poll() is None:
                raise BenchError(f"timed out: {' '.join(argv)}")
            out, err = p.communicate(timeout=10)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=5)
        peak = max(peak, server.rss_kib())
        if p.returncode != 0:
            raise BenchError(f"exit {p.returncode}: {' '.join(argv)}\n{err.strip()[:2000]}")
        code, up, down, total = out.split()
        return (int(code), int(float(up)), int(float(down)), float(total)), peak

    def wrk(self, script, url, connections, script_args=()):
        a = self.args
        argv = ["wrk", "-t", str(a.wrk_threads), "-c", str(connections), "-d", f"{a.duration}s",
                "--timeout", f"{a.wrk_timeout}s", "-s", script, url]
        if script_args:
            argv += ["--"] + [str(x) for x in script_args]
        p = self.run(argv, timeout=a.duration + a.wrk_timeout + 30, cwd=HERE)
        m = re.search(r"^BENCH (.*)$", p.stdout, re.M)
        if not m:
            raise BenchError(f"no summary from wrk:\n{p.stdout}\n{p.stderr}")
        r = {k: int(v) for k, v in (kv.split("=") for kv in m.group(1).split())}
        # wrk's own report line, counted separately so the report can show it verbatim
        m2 = re.search(r"Non-2xx or 3xx responses:\s*(\d+)", p.stdout)
        r["non2xx_line"] = int(m2.group(1)) if m2 else 0
        r["client_cpu"] = self.last_cpu
        r["stdout"] = p.stdout
        return r


# --------------------------------------------------------------------------------------------
# The benchmark


class Bench:
    def __init__(self, args, servers, client, work):
        self.args = args
        self.servers = servers
        self.client = client
        self.work = work
        self.samples = {}   # (workload, server) -> list of dicts
        self.anomalies = []

    def record(self, workload, server, **values):
        self.samples.setdefault((workload, server.name), []).append(values)

    def rounds(self):
        for r in range(1, self.args.rounds + 1):
            order = list(self.servers)
            if (self.args.access_logs or self.args.blobd_base) and r % 2 == 0:
                # Whichever server runs right after nginx pays for the writeback of nginx's
                # access log (0.87 vs 0.93 of blobd-nolog with the order swapped): swap the
                # last two every other round so both blobd variants take each place.
                order[-2:] = order[-2:][::-1]
            for s in order:
                yield r, s

    def check_foreign(self, what, m):
        if m.pct(m.foreign) > 15 or m.pct(m.steal) > 10:
            self.note(f"{what}: other processes used {m.pct(m.foreign):.0f}% of a core "
                      f"({m.foreign_text()}), hypervisor steal {m.pct(m.steal):.0f}%")

    def note(self, msg):
        log("NOTE " + msg)
        self.anomalies.append(msg)

    # -- setup

    def make_sources(self):
        a = self.args
        self.src_big = os.path.join(self.work, "src-big.bin")
        chunk = os.urandom(64 * MiB)
        with open(self.src_big, "wb") as f:
            left = a.big_bytes
            while left > 0:  # bounded: big / 64 MiB iterations
                n = min(left, len(chunk))
                f.write(chunk[:n])
                left -= n
        self.src_small = os.path.join(self.work, "src-small.bin")
        with open(self.src_small, "wb") as f:
            f.write(os.urandom(a.small_bytes))
        self.src_huge = os.path.join(self.work, "src-huge.sparse")
        with open(self.src_huge, "wb") as f:
            f.truncate(a.huge_bytes)  # sparse: reading it costs no disk I/O

    def smoke(self):
        """Same requests, same answers: PUT, full GET, one range, on every server."""
        for s in self.servers:
            s.prepare_prefix("smoke")
            code, up, _, _ = self.client.curl(["-T", self.src_small, s.url("smoke/a")])
            if code not in (200, 201, 204):
                raise BenchError(f"{s.name}: PUT smoke/a answered {code}")
            code, _, down, _ = self.client.curl([s.url("smoke/a")])
            if code != 200 or down != self.args.small_bytes:
                raise BenchError(f"{s.name}: GET smoke/a answered {code} with {down} bytes")
            code, _, down, _ = self.client.curl(["-H", "Range: bytes=100-1123", s.url("smoke/a")])
            if code != 206 or down != 1024:
                raise BenchError(f"{s.name}: ranged GET answered {code} with {down} bytes")
            code, _, _, _ = self.client.curl(["-T", self.src_small, s.url("small4k")])
            if code not in (200, 201, 204):
                raise BenchError(f"{s.name}: PUT small4k answered {code}")

    # -- workloads

    def large_upload(self):
        a = self.args
        for r, s in self.rounds():
            key = f"big-r{r}"  # fresh key per run: no rename-over writeback
            self.client.sync()
            self.client.touch_memory()
            with Meter(s) as m:
                code, up, _, t = self.client.curl(["-T", self.src_big, s.url(key)], timeout=180)
            t_sync = self.client.sync()
            self.check_foreign(f"large upload {s.name} run {r}", m)
            if code not in (200, 201, 204) or up != a.big_bytes:
                raise BenchError(f"{s.name}: upload of {key} answered {code} after {up} bytes")
            mb = a.big_bytes / 1e6
            self.record("upload", s, mbps=mb / t, secs=t, sync_secs=t_sync,
                        mbps_sync=mb / (t + t_sync), cpu_s_per_gib=m.server_cpu / (a.big_bytes / GiB),
                        foreign_cpu_pct=m.pct(m.foreign))
            log(f"large upload   r{r} {s.name:8} {mb / t:8.0f} MB/s  (+sync {t_sync:.2f} s: "
                f"{mb / (t + t_sync):.0f} MB/s)  server cpu {m.server_cpu:.2f} s  foreign {m.pct(m.foreign):.0f}%")
        self.big_key = f"big-r{a.rounds}"

    def large_download(self):
        """Each run is `--download-repeats` back-to-back downloads (one takes ~0.4 s, too short
        to measure alone); the run's figure is their total bytes over their total time."""
        a = self.args
        for r, s in self.rounds():
            t = 0.0
            with Meter(s) as m:
                for _ in range(a.download_repeats):
                    code, _, down, ti = self.client.curl([s.url(self.big_key)], timeout=120)
                    if code != 200 or down != a.big_bytes:
                        raise BenchError(f"{s.name}: download answered {code} with {down} bytes")
                    t += ti
            self.check_foreign(f"large download {s.name} run {r}", m)
            mb = a.download_repeats * a.big_bytes / 1e6
            self.record("download", s, mbps=mb / t, secs=t,
                        cpu_s_per_gib=m.server_cpu / (a.download_repeats * a.big_bytes / GiB),
                        foreign_cpu_pct=m.pct(m.foreign))
            log(f"large download r{r} {s.name:8} {mb / t:8.0f} MB/s  server cpu {m.server_cpu:.2f} s  "
                f"foreign {m.pct(m.foreign):.0f}%")

    def _wrk(self, workload, s, script, url, conns, script_args=()):
        with Meter(s) as m:
            w = self.client.wrk(script, url, conns, script_args)
        secs = w["duration_us"] / 1e6
        ok = w["requests"] - w["status"]
        errors = w["connect"] + w["read"] + w["write"] + w["timeout"]
        server_cpu = m.server_cpu
        rec = dict(rps=ok / secs, requests=w["requests"], non2xx=w["status"],
                   non2xx_line=w["non2xx_line"], socket_errors=errors,
                   p50_ms=w["p50_us"] / 1000, p99_ms=w["p99_us"] / 1000, max_ms=w["max_us"] / 1000,
                   server_cpu_pct=100 * server_cpu / secs, client_cpu_pct=100 * w["client_cpu"] / secs,
                   cpu_us_per_req=1e6 * server_cpu / max(ok, 1),
                   softirq_cpu_pct=m.pct(m.softirq), steal_cpu_pct=m.pct(m.steal),
                   foreign_cpu_pct=m.pct(m.foreign),
                   client_us_per_req=1e6 * w["client_cpu"] / max(ok, 1))
        self.record(workload, s, **rec)
        if w["status"] or w["non2xx_line"] or errors:
            self.note(f"{workload} {s.name}: {w['status']} non-2xx/3xx responses "
                      f"(wrk's 'Non-2xx or 3xx responses' line: {w['non2xx_line']}), "
                      f"{errors} socket errors (connect {w['connect']}, read {w['read']}, "
                      f"write {w['write']}, timeout {w['timeout']}) of {w['requests']}")
        log(f"{workload:14} {s.name:8} {rec['rps']:8.0f} req/s  p99 {rec['p99_ms']:6.2f} ms  "
            f"server {rec['cpu_us_per_req']:6.1f} us/req ({rec['server_cpu_pct']:.0f}% cpu)  "
            f"wrk {rec['client_cpu_pct']:.0f}%  softirq {rec['softirq_cpu_pct']:.0f}%  "
            f"steal {rec['steal_cpu_pct']:.0f}%  foreign {rec['foreign_cpu_pct']:.0f}%  non-2xx {w['status']}")
        self.check_foreign(f"{workload} {s.name}", m)
        return rec

    def ranged(self):
        a = self.args
        for r, s in self.rounds():
            self._wrk("ranged", s, "ranged.lua", s.url(self.big_key), a.ranged_connections,
                      (a.big_bytes, a.range_bytes, 1000 + r, 16384))

    def put_small(self):
        a = self.args
        for r, s in self.rounds():
            prefix = f"small-r{r}"  # fresh prefix per run; nothing is deleted before the end
            s.prepare_prefix(prefix)
            self.client.sync()
            self.client.touch_memory()
            self._wrk("put_small", s, "put_small.lua", s.base + "/", a.put_connections,
                      (prefix, a.small_bytes))
            code, _, down, _ = self.client.curl([s.url(f"{prefix}/0-2")])  # wrk discards each thread's first request()
            if code != 200 or down != a.small_bytes:
                self.note(f"put_small {s.name}: GET {prefix}/0-2 answered {code} with {down} bytes")
        self.client.sync()  # so the small files' writeback does not land in the next workload

    def get_small(self):
        a = self.args
        for r, s in self.rounds():
            self._wrk("get_small", s, "get_small.lua", s.url("small4k"), a.get_connections)

    def huge_rss(self):
        """blobd only: VmRSS sampled every 0.2 s during a 4 GiB upload and its download."""
        a = self.args
        s = next(x for x in self.servers if x.name == "blobd")
        self.client.sync()
        self.client.touch_memory()
        (code, up, _, t), peak = self.client.curl_sampled(["-T", self.src_huge, s.url("huge")], s)
        if code not in (200, 201) or up != a.huge_bytes:
            raise BenchError(f"blobd: {a.huge_bytes} B upload answered {code} after {up} bytes")
        self.huge_up = dict(rss_mib=peak / 1024, mbps=a.huge_bytes / 1e6 / t)
        log(f"huge upload   blobd {a.huge_bytes / GiB:g} GiB {a.huge_bytes / 1e6 / t:.0f} MB/s, max VmRSS {peak / 1024:.1f} MiB")
        (code, _, down, t), peak = self.client.curl_sampled([s.url("huge")], s)
        if code != 200 or down != a.huge_bytes:
            raise BenchError(f"blobd: {a.huge_bytes} B download answered {code} with {down} bytes")
        self.huge_down = dict(rss_mib=peak / 1024, mbps=a.huge_bytes / 1e6 / t)
        log(f"huge download blobd {a.huge_bytes / GiB:g} GiB {a.huge_bytes / 1e6 / t:.0f} MB/s, max VmRSS {peak / 1024:.1f} MiB")

    def final_memory(self):
        self.hwm = {s.name: s.hwm_kib() / 1024 for s in self.servers}
        for s in self.servers:
            if s.proc.poll() is not None:
                self.note(f"{s.name} exited during the run (code {s.proc.returncode})")

    # -- report

    def med(self, workload, server, field):
        xs = [x[field] for x in self.samples.get((workload, server), [])]
        return statistics.median(xs) if xs else None

    def table(self):
        names = [s.name for s in self.servers]
        T = TARGETS

        def f0(x):
            return "–" if x is None else f"{x:,.0f}"

        def f2(x):
            return "–" if x is None else f"{x:.2f}"

        def ratio(b, o):
            if b is None or o is None or o == 0:
                return None
            return b / o

        def verdict(x, target, higher=True):
            if x is None:
                return ""
            ok = x >= target if higher else x <= target
            return "ok" if ok else "MISS"

        rows = []

        def add(label, values, fmt, extra=None, target=None, lower_better=False, target_of=None):
            # values: name -> number or None; extra: name -> string appended in the cell
            cells = []
            for n in names:
                v = values.get(n)
                c = fmt(v)
                if extra and v is not None and extra.get(n):
                    c += f" ({extra[n]})"
                cells.append(c)
            b = values.get("blobd")
            rn = ratio(b, values.get("nginx"))
            rl = ratio(b, values.get("lighttpd"))
            tgt = ""
            if target is not None:
                base = rn if target_of is None else target_of
                tgt = f"≥ {target} {verdict(base, target)}"
            elif lower_better:
                tgt = "(lower is better)"
            rows.append([label] + cells + [f2(rn), f2(rl), tgt])

        def per(workload, field):
            return {n: self.med(workload, n, field) for n in names}

        def cpu(workload, field, unit, digits=1):
            d = per(workload, field)
            return {n: (None if v is None else f"{v:.{digits}f} {unit}") for n, v in d.items()}

        a = self.args
        big = f"{a.big_bytes / GiB:g} GiB"
        up = per("upload", "mbps")
        up_sync = per("upload", "mbps_sync")
        add(f"1. large upload {big} (curl -T), MB/s", up, f0, cpu("upload", "cpu_s_per_gib", "cpu s/GiB", 2))
        target_base = ratio(up.get("blobd"), up_sync.get("nginx"))
        add(f"1. large upload {big} incl. `sync`, MB/s; target: blobd / (nginx+sync)", up_sync, f0,
            target=T["upload_sync"], target_of=target_base)
        add(f"2. large download {big} (curl > /dev/null), MB/s", per("download", "mbps"), f0,
            cpu("download", "cpu_s_per_gib", "cpu s/GiB", 2), target=T["download"])
        rk = f"{a.range_bytes // KiB} KiB"
        add(f"3. ranged reads {rk}, {a.ranged_connections} conns, req/s", per("ranged", "rps"), f0,
            cpu("ranged", "cpu_us_per_req", "µs cpu/req"), target=T["ranged"])
        add(f"3. ranged reads {rk}, p99 latency, ms", per("ranged", "p99_ms"), f2, lower_better=True)
        sk = f"{a.small_bytes // KiB} KiB"
        add(f"4. small uploads {sk}, {a.put_connections} conns, req/s", per("put_small", "rps"), f0,
            cpu("put_small", "cpu_us_per_req", "µs cpu/req"), target=T["put_small"])
        add(f"5. small reads {sk}, {a.get_connections} conns, req/s", per("get_small", "rps"), f0,
            cpu("get_small", "cpu_us_per_req", "µs cpu/req"), target=T["get_small"])
        hwm = dict(self.hwm)
        add("6. peak RSS (VmHWM) over the whole run, MiB", hwm, lambda x: "–" if x is None else f"{x:.1f}",
            lower_better=True)
        rows[-1][-1] = f"blobd ≤ {T['rss_mib']} MiB {verdict(hwm.get('blobd'), T['rss_mib'], higher=False)}"
        hb = f"{a.huge_bytes / GiB:g} GiB"
        if getattr(self, "huge_up", None):
            add(f"6. RSS during a {hb} upload (max VmRSS, 0.2 s samples), MiB",
                {"blobd": self.huge_up["rss_mib"]}, lambda x: "–" if x is None else f"{x:.1f}",
                extra={"blobd": f"{self.huge_up['mbps']:,.0f} MB/s"})
            add(f"6. RSS during a {hb} download (max VmRSS, 0.2 s samples), MiB",
                {"blobd": self.huge_down["rss_mib"]}, lambda x: "–" if x is None else f"{x:.1f}",
                extra={"blobd": f"{self.huge_down['mbps']:,.0f} MB/s"})
            for r, v in zip(rows[-2:], (self.huge_up["rss_mib"], self.huge_down["rss_mib"])):
                r[-1] = f"blobd ≤ {T['rss_mib']} MiB " + verdict(v, T["rss_mib"], higher=False)

        header = ["workload"] + names + ["blobd/nginx", "blobd/lighttpd", "target (blobd/nginx)"]
        widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]

        def line(cells):
            return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"

        out = [line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
        out += [line(r) for r in rows]
        return "\n".join(out)

    def access_log_cost(self):
        """With --access-logs: blobd with its access log against blobd without (target ≥ 0.90)."""
        rows = ["| workload | blobd with access log | blobd-nolog | with/without | target |", "|---|---|---|---|---|"]
        for workload, label in (("ranged", "ranged reads, req/s"), ("get_small", "small reads, req/s"),
                                ("put_small", "small uploads, req/s")):
            on, off = self.med(workload, "blobd", "rps"), self.med(workload, "blobd-nolog", "rps")
            if on is None or off is None:
                continue
            r = on / off
            rows.append(f"| {label} | {on:,.0f} | {off:,.0f} | {r:.2f} | ≥ 0.90 {'ok' if r >= 0.9 else 'MISS'} |")
        return "Access log cost (nginx also logs to a file in this run):\n\n" + "\n".join(rows)

    def base_ratios(self):
        """With --blobd-base: this blobd against another build, run interleaved (an A/B of a change)."""
        rows = ["| workload | blobd | blobd-base | blobd/base |", "|---|---|---|---|"]
        for workload, field, label in (("upload", "mbps", "large upload, MB/s"),
                                       ("upload", "mbps_sync", "large upload + sync, MB/s"),
                                       ("download", "mbps", "large download, MB/s"),
                                       ("ranged", "rps", "ranged reads, req/s"),
                                       ("put_small", "rps", "small uploads, req/s"),
                                       ("get_small", "rps", "small reads, req/s")):
            new, old = self.med(workload, "blobd", field), self.med(workload, "blobd-base", field)
            if new is None or old is None:
                continue
            rows.append(f"| {label} | {new:,.0f} | {old:,.0f} | {new / old:.3f} |")
        return (f"A/B against blobd-base ({self.args.blobd_base}), order swapped every other round:\n\n"
                + "\n".join(rows))

    def details(self):
        out = []
        wl = [("upload", ["mbps", "mbps_sync", "sync_secs", "cpu_s_per_gib", "foreign_cpu_pct"]),
              ("download", ["mbps", "cpu_s_per_gib", "foreign_cpu_pct"]),
              ("ranged", ["rps", "p50_ms", "p99_ms", "cpu_us_per_req", "server_cpu_pct",
                          "client_us_per_req", "client_cpu_pct", "softirq_cpu_pct", "steal_cpu_pct", "foreign_cpu_pct",
                          "non2xx", "socket_errors"]),
              ("put_small", ["rps", "requests", "p50_ms", "p99_ms", "cpu_us_per_req", "server_cpu_pct",
                             "client_us_per_req", "client_cpu_pct", "softirq_cpu_pct", "steal_cpu_pct", "foreign_cpu_pct",
                          "non2xx", "socket_errors"]),
              ("get_small", ["rps", "p50_ms", "p99_ms", "cpu_us_per_req", "server_cpu_pct",
                             "client_us_per_req", "client_cpu_pct", "softirq_cpu_pct", "steal_cpu_pct", "foreign_cpu_pct",
                          "non2xx", "socket_errors"])]
        for w, fields in wl:
            if not any(self.samples.get((w, s.name)) for s in self.servers):
                continue
            out.append(f"- **{w}**")
            for s in self.servers:
                runs = self.samples.get((w, s.name), [])
                parts = []
                for fld in fields:
                    vals = [x[fld] for x in runs]
                    if fld in ("non2xx", "socket_errors", "requests"):
                        parts.append(f"{fld} {'/'.join(str(int(v)) for v in vals)}")
                    else:
                        parts.append(f"{fld} {'/'.join(f'{v:.4g}' for v in vals)}")
                out.append(f"  - {s.name}: " + ", ".join(parts))
        out.append("- **VmHWM (MiB) after each phase**: " + "; ".join(
            f"{step} " + " ".join(f"{n} {v:.1f}" for n, v in h.items()) for step, h in self.hwm_steps))
        return "\n".join(out)


def versions(args):
    def first_line(argv):
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=10)
            return (p.stdout + p.stderr).strip().splitlines()[0]
        except (OSError, subprocess.TimeoutExpired, IndexError):
            return "?"
    commit = first_line(["git", "-C", REPO, "rev-parse", "--short", "HEAD"])
    built = time.strftime("%Y-%m-%d %H:%M", time.localtime(os.stat(args.blobd).st_mtime)) \
        if os.path.exists(args.blobd) else "?"
    return (f"{first_line(['nginx', '-v'])}; {first_line(['lighttpd', '-v'])}; "
            f"{first_line(['wrk', '-v'])}; {first_line(['curl', '--version'])}; kernel {os.uname().release}; "
            f"{os.cpu_count()} cores; blobd {args.blobd} built {built}, repo HEAD {commit}")


def parse_size(text):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMG]i?B?)?", text.strip(), re.I)
    if not m:
        raise argparse.ArgumentTypeError(f"bad size {text!r}")
    unit = (m.group(2) or "").upper()[:1]
    return int(float(m.group(1)) * {"": 1, "K": KiB, "M": MiB, "G": GiB}[unit])


def main():
    ap = argparse.ArgumentParser(description="blobd vs nginx vs lighttpd (see bench/README.md)")
    ap.add_argument("--blobd", default=os.environ.get("BLOBD_BIN", os.path.join(REPO, ".build/release/blobd")))
    ap.add_argument("--blobd-threads", type=int, default=int(os.environ.get("BENCH_BLOBD_THREADS", "0")),
                    help="blobd --threads (default: blobd's own default, the number of cores)")
    ap.add_argument("--tmpdir", default=os.environ.get("BENCH_TMPDIR") or os.environ.get("TMPDIR") or "/tmp",
                    help="where the temp dir (server roots, data dir, sources) goes")
    ap.add_argument("--rounds", type=int, default=2, help="runs per server and workload (A,B,C,A,B,C)")
    ap.add_argument("--duration", type=int, default=5, help="seconds per wrk run")
    ap.add_argument("--wrk-timeout", type=int, default=5)
    ap.add_argument("--download-repeats", type=int, default=3, help="1 GiB downloads per run")
    ap.add_argument("--time-budget", type=int, default=480,
                    help="seconds every measurement must fit in; a hanging server fails the run then")
    ap.add_argument("--wrk-threads", type=int, default=2)
    ap.add_argument("--big", type=parse_size, default=GiB, dest="big_bytes")
    ap.add_argument("--huge", type=parse_size, default=4 * GiB, dest="huge_bytes")
    ap.add_argument("--small", type=parse_size, default=4 * KiB, dest="small_bytes")
    ap.add_argument("--range", type=parse_size, default=64 * KiB, dest="range_bytes")
    ap.add_argument("--ranged-connections", type=int, default=64)
    ap.add_argument("--put-connections", type=int, default=16)
    ap.add_argument("--get-connections", type=int, default=64)
    ap.add_argument("--touch-gib", type=float, default=3.0, help="memory touched before each timed upload")
    ap.add_argument("--servers", default="nginx,lighttpd,blobd")
    ap.add_argument("--blobd-base", default="",
                    help="a second blobd binary (say, main's build before a change) run as blobd-base, "
                         "interleaved with blobd; the report adds blobd/blobd-base per workload")
    ap.add_argument("--access-logs", action="store_true",
                    help="nginx and blobd with their access logs on (to files), plus blobd-nolog, a second "
                         "blobd with its log off, to show what the log costs (make bench-logs)")
    ap.add_argument("--workloads", default="upload,download,ranged,put_small,get_small,huge",
                    help="subset, for experiments (download and ranged need upload)")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "latest.md"),
                    help="where the Markdown table goes ('' for nowhere)")
    args = ap.parse_args()
    t_start = time.monotonic()
    workloads = set(args.workloads.split(","))
    wanted = args.servers.split(",")
    if args.access_logs and "blobd" in wanted and "blobd-nolog" not in wanted:
        wanted.append("blobd-nolog")
    if args.blobd_base and "blobd-base" not in wanted:
        wanted.append("blobd-base")

    missing = [t for t in ("curl", "wrk", "sync") + tuple(n for n in ("nginx", "lighttpd") if n in wanted)
               if shutil.which(t) is None]
    if missing:
        sys.exit(f"bench: missing {', '.join(missing)} (apt-get install nginx lighttpd lighttpd-mod-webdav wrk curl)")
    if "lighttpd" in wanted and not os.path.exists("/usr/lib/lighttpd/mod_webdav.so"):
        sys.exit("bench: lighttpd's mod_webdav is missing (apt-get install lighttpd-mod-webdav)")
    if "blobd" in wanted and not os.access(args.blobd, os.X_OK):
        sys.exit(f"bench: no blobd binary at {args.blobd}; build it with `swift build -c release`")

    n_srv = len(wanted)
    need = (args.big_bytes + args.rounds * n_srv * args.big_bytes
            + (args.huge_bytes if "huge" in workloads and "blobd" in wanted else 0) + 2 * GiB)
    os.makedirs(args.tmpdir, exist_ok=True)
    free = shutil.disk_usage(args.tmpdir).free
    if free < need:
        sys.exit(f"bench: needs {need / GiB:.1f} GiB free in {args.tmpdir}, has {free / GiB:.1f} GiB")

    # SIGTERM/SIGHUP behave like Ctrl-C: unwind through `finally`, which stops what we started.
    def on_signal(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    signal.signal(signal.SIGINT, on_signal)  # also when started with SIGINT ignored (`cmd &`)

    early_notes = []
    # ext4 here creates files slowly for ~6 min after ~10^5 deletions, like the clean-up of the
    # previous run: say so next to the numbers rather than wait (the run must stay < 10 min).
    marker = os.path.join(args.tmpdir, "blobd-bench.last-cleanup")
    try:
        ago = time.time() - os.stat(marker).st_mtime
        if ago < 420:
            early_notes.append(f"the previous run's clean-up (~10^5 small files deleted) was {ago:.0f} s "
                               "ago; ext4 creates files slowly for ~6 min after that, so small uploads "
                               "may read low")
    except OSError:
        pass
    p0 = user_process_ticks()
    time.sleep(1.0)
    busy = sorted(((n, t - p0[pid][1]) for pid, (n, t) in user_process_ticks().items()
                   if pid in p0 and pid != os.getpid() and t > p0[pid][1]), key=lambda x: -x[1])
    if sum(t for _, t in busy) / CLK_TCK > 0.15:
        early_notes.append("machine not idle at start: " + ", ".join(
            f"{n} {100 * t / CLK_TCK:.0f}%" for n, t in busy[:4]) + " of a core")
    for n in early_notes:
        log("NOTE " + n)

    work = tempfile.mkdtemp(prefix="blobd-bench.", dir=args.tmpdir)
    log(f"temp dir {work} ({free / GiB:.0f} GiB free, needs {need / GiB:.1f})")
    servers = []
    client = Client(args, t_start + args.time_budget)
    bench = None
    ok = False
    try:
        for n in wanted:
            s = {"nginx": lambda: Nginx(work, access_log=args.access_logs), "lighttpd": lambda: Lighttpd(work),
                 "blobd": lambda: Blobd(work, args.blobd, args.blobd_threads, access_log=args.access_logs),
                 "blobd-nolog": lambda: Blobd(work, args.blobd, args.blobd_threads, name="blobd-nolog"),
                 "blobd-base": lambda: Blobd(work, args.blobd_base, args.blobd_threads, name="blobd-base")}[n]()
            servers.append(s)
            s.start()
            s.mark_started()
            log(f"{s.name} pid {s.proc.pid} on {s.base}")
        bench = Bench(args, servers, client, work)
        bench.anomalies += early_notes
        bench.make_sources()
        bench.smoke()
        steps = [("upload", bench.large_upload), ("download", bench.large_download),
                 ("ranged", bench.ranged), ("put_small", bench.put_small),
                 ("get_small", bench.get_small), ("huge", bench.huge_rss)]
        bench.hwm_steps = [("start", {s.name: s.hwm_kib() / 1024 for s in servers})]
        for name, fn in steps:
            if name in workloads and (name != "huge" or "blobd" in wanted):
                fn()
                bench.hwm_steps.append((name, {s.name: s.hwm_kib() / 1024 for s in servers}))
        bench.final_memory()
        ok = True
    except KeyboardInterrupt as e:
        log(f"interrupted ({e}); cleaning up")
    except BenchError as e:
        log(f"FAILED: {e}")
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # let the clean-up finish
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        logs = {}
        for s in reversed(servers):
            try:
                s.stop()
            except Exception as e:  # keep stopping the others
                log(f"stopping {s.name}: {e}")
            logs[s.name] = s.error_lines()
        t_clean = time.monotonic()
        shutil.rmtree(work, ignore_errors=True)
        subprocess.run(["sync"], timeout=300)
        if bench is not None and "put_small" in workloads:
            try:
                with open(marker, "w") as f:
                    f.write(f"{time.time()}\n")
            except OSError:
                pass
        log(f"removed {work} and synced in {time.monotonic() - t_clean:.1f} s")
    if not ok:
        sys.exit(1)

    total = time.monotonic() - t_start
    table = bench.table()
    blobd_threads = args.blobd_threads or f"default ({os.cpu_count()})"
    notes = [
        "",
        f"Medians of {args.rounds} runs per server, run in turn "
        f"({', '.join(s.name for s in servers)}, repeated). MB/s = 10^6 bytes/s. "
        f"wrk: {args.wrk_threads} threads, {args.duration} s per run; req/s counts 2xx/3xx answers only. "
        "Server CPU = utime+stime deltas from /proc/PID/stat (nginx: master + workers), next to "
        "req/s as µs per request (loopback TCP work partly runs as softirq, which the per-run softirq % "
        "shows and which overlaps process time); client and servers share the same "
        f"{os.cpu_count()} cores. Peak RSS of nginx is the sum of its processes' VmHWM. "
        f"blobd threads: {blobd_threads}. Total time {total:.0f} s.",
        "",
        "Versions: " + versions(args) + ".",
    ]
    odd = list(bench.anomalies)
    for name, (n, lines) in logs.items():
        if n:
            odd.append(f"{name} log: {n} error/warning lines, e.g. " + " / ".join(lines[:3]))
    notes.append("")
    notes.append("Anomalies:" + (" none (no non-2xx answers, no socket errors, no error lines in the "
                                 "server logs, no other busy processes)" if not odd else ""))
    notes += [f"- {x}" for x in odd]
    notes += ["", "Per-run values (run 1/run 2/...):", "", bench.details()]
    if args.access_logs:
        table += "\n\n" + bench.access_log_cost()
    if args.blobd_base:
        table += "\n\n" + bench.base_ratios()
    report = (f"# blobd benchmark — {time.strftime('%Y-%m-%d %H:%M:%S %Z')}\n\n" + table + "\n"
              + "\n".join(notes) + "\n")
    print(report)
    if args.out:
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        with open(args.out, "w") as f:
            f.write(report)
        log(f"wrote {args.out}")
    log(f"total {total:.0f} s")


if __name__ == "__main__":
    main()

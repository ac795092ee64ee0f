"""What the benchmarks share: a time budget that every command they run stays within (so a run
stops itself), log lines, one timed curl request, the CPU meter, a blobd on its own data
directory, and a wrk run."""
import os
import re
import resource
import signal
import subprocess
import sys
import time

from bench import CLK_TCK, user_process_ticks

_deadline = 0.0


class BenchError(Exception):
    pass


def set_budget(seconds):
    """Starts the run's time budget: every command from now on must end within it."""
    global _deadline
    _deadline = time.monotonic() + seconds


def logger(name):
    """A function that prints `[NAME HH:MM:SS] message` to stderr."""
    def log(msg):
        print(f"[{name} {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)
    return log


def left(want):
    """`want` seconds, cut to what is left of the run's time budget."""
    rest = _deadline - time.monotonic()
    if rest < 2:
        raise BenchError("out of time: the run's --time-budget is spent")
    return max(1, int(min(want, rest)))


def run(argv, want=60, check=False, cwd=None):
    """Runs `argv` to its end within `want` seconds (and the budget); with `check`, a non-zero
    exit raises BenchError with the output's tail."""
    t = left(want)
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=t, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise BenchError(f"timed out after {t} s: {' '.join(argv)[:200]}")
    if check and p.returncode != 0:
        raise BenchError(f"exit {p.returncode}: {' '.join(argv)[:200]}\n{(p.stdout + p.stderr)[-1500:]}")
    return p


def curl(args, want):
    """One curl request: (HTTP code, bytes up, bytes down, seconds, message); code 0 and curl's
    message when it got no answer."""
    t = left(want)
    p = run(["curl", "-sS", "--max-time", str(t), "-o", "/dev/null", "-w",
             "%{http_code} %{size_upload} %{size_download} %{time_total}"] + args, want=t + 5)
    try:
        code, up, down, secs = p.stdout.split()
        return int(code), int(float(up)), int(float(down)), float(secs), p.stderr.strip()[:300]
    except ValueError:
        return 0, 0, 0, 0.0, (p.stdout + p.stderr).strip()[:300]


def add_common_arguments(ap, repo, what, result, time_budget):
    """The options both benchmarks take: the binary, the temp dir, rounds, run length, the
    memory touched before writes, the time budget, a quick smoke run and the report path.
    `what` names a round's unit (a target, a set-up); `result` the default report file."""
    ap.add_argument("--blobd", default=os.environ.get("BLOBD_BIN", os.path.join(repo, ".build/release/blobd")))
    ap.add_argument("--tmpdir", default=os.environ.get("BENCH_TMPDIR") or os.environ.get("TMPDIR") or "/tmp")
    ap.add_argument("--rounds", type=int, default=2, help=f"runs per {what} and workload (A,B,C,A,B,C)")
    ap.add_argument("--duration", type=int, default=5, help="seconds per wrk run")
    ap.add_argument("--touch-gib", type=float, default=3.0, help="memory touched before each write run (see README)")
    ap.add_argument("--time-budget", type=int, default=time_budget, help="seconds; the run stops itself after that")
    ap.add_argument("--quick", action="store_true", help="smoke run: 1 round, 2 s, 64 MiB, no report file")
    ap.add_argument("--out", default=None, help=f"report path (default bench/results/{result}; '' for none)")


class Meter:
    """Over one run (a `with` block): the CPU seconds of the measured processes by kind (`cpu()`
    gives their clock ticks so far, by kind) and in all; of the clients this script ran (wrk,
    curl); the machine's busy and steal shares of all CPU time (/proc/stat); and the CPU of the
    processes outside `ours()` in % of a core (a build on the same machine spoils the figures:
    the reports say so)."""

    def __init__(self, cpu, ours):
        self.cpu, self.ours = cpu, ours

    @staticmethod
    def machine():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return sum(v), sum(v) - v[3] - v[4], v[7], r.ru_utime + r.ru_stime

    def __enter__(self):
        self.c0, self.m0, self.p0, self.t0 = self.cpu(), self.machine(), user_process_ticks(), time.monotonic()
        return self

    def __exit__(self, *exc):
        c1, m1, secs = self.cpu(), self.machine(), max(time.monotonic() - self.t0, 1e-9)
        self.parts = {k: (v - self.c0.get(k, 0)) / CLK_TCK for k, v in c1.items()}
        self.server_cpu, self.client_cpu = sum(self.parts.values()), m1[3] - self.m0[3]
        total, busy, steal = (y - x for x, y in zip(self.m0[:3], m1[:3]))
        self.steal_pct, self.busy_pct = 100 * steal / max(total, 1), 100 * busy / max(total, 1)
        ours, foreign = set(self.ours()) | {os.getpid()}, {}
        for pid, (name, ticks) in user_process_ticks().items():
            d = ticks - self.p0.get(pid, (name, 0))[1]
            if pid not in ours and d > 0:
                foreign[name] = foreign.get(name, 0) + 100 * d / CLK_TCK / secs
        self.foreign_pct = sum(foreign.values())
        self.foreign_top = ", ".join(f"{n} {c:.0f}%" for n, c in sorted(foreign.items(), key=lambda x: -x[1])[:3])
        return False


def publish(text, out, started, log):
    """Prints the report and writes it to `out` (when set), then logs the run's total time;
    without a report (the run failed) exits 1."""
    if text is None:
        sys.exit(1)
    print(text)
    if out:
        os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
        with open(out, "w") as f:
            f.write(text)
        log(f"wrote {out}")
    log(f"total {time.monotonic() - started:.0f} s")


def stop(proc):
    """Stops a process this script started (by its PID): SIGTERM, then SIGKILL after 15 s."""
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def interrupt_on_signals():
    """From now on SIGTERM, SIGHUP and SIGINT raise KeyboardInterrupt, so a run cleans up."""
    def on_signal(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, on_signal)


def guarded(workloads, cleanup, log):
    """Runs `workloads()`, which returns the report, then `cleanup()` whatever happened, with
    SIGINT and SIGTERM ignored so that it runs to its end. Returns the report, or None when the
    run failed or was interrupted (said in the log)."""
    try:
        return workloads()
    except KeyboardInterrupt as e:
        log(f"interrupted ({e}); cleaning up")
    except BenchError as e:
        log(f"FAILED: {e}")
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        cleanup()
    return None


HERE = os.path.dirname(os.path.abspath(__file__))


class Blobd:
    def __init__(self, name, binary, work, extra):
        self.name, self.binary, self.extra = name, binary, extra
        self.data, self.err = os.path.join(work, name + "-data"), os.path.join(work, name + ".stderr.log")
        self.proc, self.port = None, None

    def start(self):
        argv = [self.binary, "--data-dir", self.data, "--listen", "127.0.0.1:0", "--log-level", "warning"] + self.extra
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=open(self.err, "w"))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and self.proc.poll() is None:
            m = re.search(r"blobd listening on http://127\.0\.0\.1:(\d+)", open(self.err, errors="replace").read())
            if m:
                self.port = int(m.group(1))
                return
            time.sleep(0.05)
        raise BenchError(f"{self.name} did not start; see {self.err}")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            stop(self.proc)


def wrk(args, script, url, connections, headers, script_args=()):
    argv = ["wrk", "-t", "2", "-c", str(connections), "-d", f"{args.duration}s", "--timeout", "5s", "-s", script]
    for h in headers:
        argv += ["-H", h]
    argv += [url]
    if script_args:
        argv += ["--"] + [str(a) for a in script_args]
    out = run(argv, want=args.duration + 30, check=True, cwd=HERE).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if bad:
        raise BenchError(f"{url}: {bad.group(1)} answers outside 2xx/3xx")
    return rps

"""What bench/s3bench.py and bench/cluster.py share: a time budget that every command they run
stays within (so a run stops itself), log lines, and one timed curl request."""
import os
import subprocess
import sys
import time

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

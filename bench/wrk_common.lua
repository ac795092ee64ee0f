-- Shared by the wrk scripts of bench/: numbers each wrk thread and prints one
-- machine-readable summary line that bench.py parses (no per-response Lua hook, so
-- wrk keeps its fast path).
local next_id = 0

function setup(thread)
   thread:set("tid", next_id)
   next_id = next_id + 1
end

function done(summary, latency, requests)
   local e = summary.errors
   io.write(string.format(
      "BENCH requests=%d duration_us=%d bytes=%d connect=%d read=%d write=%d status=%d timeout=%d p50_us=%d p99_us=%d max_us=%d\n",
      summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write,
      e.status, e.timeout, latency:percentile(50.0), latency:percentile(99.0), latency.max))
end

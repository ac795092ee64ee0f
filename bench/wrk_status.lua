-- Loaded by wrk scripts that must check every answer (s3_urls.lua, cluster_put.lua), after
-- wrk_common.lua: counts every answer outside 200-299, prints the first few, and adds the count
-- to the BENCH summary line as non2xx=N. The per-response hook costs wrk some speed, the same
-- for every server it is pointed at.
local threads = {}
local numbered = setup   -- wrk_common.lua's: numbers the threads

function setup(thread)
   numbered(thread)
   table.insert(threads, thread)
end

non2xx = 0   -- global: done() reads it with thread:get

function response(status, headers, body)
   if status < 200 or status > 299 then
      non2xx = non2xx + 1
      if non2xx <= 3 then io.stderr:write("non-2xx " .. status .. ": " .. string.sub(body or "", 1, 300) .. "\n") end
   end
end

function done(summary, latency, requests)
   local bad = 0
   for _, t in ipairs(threads) do bad = bad + (t:get("non2xx") or 0) end
   local e = summary.errors
   io.write(string.format(
      "BENCH requests=%d duration_us=%d bytes=%d connect=%d read=%d write=%d status=%d timeout=%d non2xx=%d p50_us=%d p99_us=%d max_us=%d\n",
      summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write,
      e.status, e.timeout, bad, latency:percentile(50.0), latency:percentile(99.0), latency.max))
end

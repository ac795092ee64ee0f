-- Requests to a list of request targets (path?query, one a line, e.g. presigned S3 URLs with the
-- scheme and host cut off), cycled in order; each thread starts at its own offset. The Host
-- header is wrk's (the URL given to wrk), which is the host the presigned URLs were signed for.
-- PUT sends the same SIZE-byte random body every time; extra headers (the bearer token of
-- /v1) come from wrk -H. Every answer outside 200-299 is counted and printed in the summary.
-- wrk ... -s s3_urls.lua http://HOST:PORT -- FILE GET|PUT [SIZE]
dofile("wrk_common.lua")
dofile("wrk_status.lua")

local reqs, n, i = {}, 0, 0

function init(args)
   local file, method, size = args[1], args[2] or "GET", tonumber(args[3] or 4096)
   local body = nil
   if method == "PUT" then
      local t = {}
      math.randomseed(1000 + (tid or 0))
      for k = 1, size do t[k] = string.char(math.random(0, 255)) end
      body = table.concat(t)
   end
   for line in io.lines(file) do
      if line ~= "" then
         n = n + 1
         reqs[n] = wrk.format(method, line, nil, body)
      end
   end
   assert(n > 0, "no request targets in " .. file)
   i = (tid or 0) * math.floor(n / 2)   -- threads apart (2 threads by default)
end

function request()
   i = i % n + 1
   return reqs[i]
end

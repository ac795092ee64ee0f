-- PUTs of a fixed SIZE-byte body to distinct keys /v1/blobs/PREFIX/THREAD-COUNTER, so no
-- request replaces an existing file (PREFIX must be fresh for every run). wrk calls
-- request() once per thread before the run and drops it, so counters start at 2.
-- wrk ... -s put_small.lua URL -- PREFIX [SIZE]
dofile("wrk_common.lua")

local head, tail, n = nil, nil, 0

function init(args)
   local prefix = args[1] or "small"
   local size = tonumber(args[2] or 4096)
   local t = {}
   math.randomseed(1000 + (tid or 0))
   for k = 1, size do t[k] = string.char(math.random(0, 255)) end
   head = "PUT /v1/blobs/" .. prefix .. "/" .. tid .. "-"
   -- everything after the counter: the rest of the request line, headers, body
   local req = wrk.format("PUT", "/", nil, table.concat(t))
   tail = string.sub(req, 6)  -- drop "PUT /"
end

function request()
   n = n + 1
   return head .. n .. tail
end

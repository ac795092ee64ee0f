-- PUTs of a fixed body to distinct keys /v1/blobs/PREFIX/THREAD-COUNTER, so no request
-- replaces an existing file. PREFIX must be fresh for every run.
-- wrk ... -s put_small.lua URL -- PREFIX [SIZE]
dofile("wrk_common.lua")

local prefix, body, n = "small", nil, 0

function init(args)
   prefix = args[1] or prefix
   local size = tonumber(args[2] or 4096)
   local t = {}
   math.randomseed(1000 + (tid or 0))
   for i = 1, size do t[i] = string.char(math.random(0, 255)) end
   body = table.concat(t)
end

function request()
   n = n + 1
   return wrk.format("PUT", "/v1/blobs/" .. prefix .. "/" .. tid .. "-" .. n, nil, body)
end

-- PUTs of a fixed SIZE-byte body over KEYS keys /v1/blobs/PREFIX/THREAD-N (N = counter mod
-- KEYS): every request after the first round replaces a blob (in a versioned bucket, keeps
-- the version it replaces).
-- wrk ... -s put_overwrite.lua URL -- PREFIX [SIZE] [KEYS]
dofile("wrk_common.lua")

local head, tail, n, keys = nil, nil, 0, 64

function init(args)
   local prefix = args[1] or "small"
   local size = tonumber(args[2] or 4096)
   keys = tonumber(args[3] or 64)
   local t = {}
   math.randomseed(2000 + (tid or 0))
   for k = 1, size do t[k] = string.char(math.random(0, 255)) end
   head = "PUT /v1/blobs/" .. prefix .. "/" .. tid .. "-"
   local req = wrk.format("PUT", "/", nil, table.concat(t))
   tail = string.sub(req, 6)  -- drop "PUT /"
end

function request()
   n = n + 1
   return head .. (n % keys) .. tail
end

-- Random single-range GETs: "Range: bytes=OFF-(OFF+LEN-1)" with OFF uniform in
-- [0, SIZE-LEN] (byte-granular, so mostly unaligned), over the URL given to wrk.
-- Each thread draws POOL requests up front from its own seeded generator and cycles
-- through them, so wrk spends its CPU (shared with the server) on I/O, not on Lua.
-- wrk ... -s ranged.lua URL -- SIZE [LEN] [SEED] [POOL]
dofile("wrk_common.lua")

local pool, i = {}, 0

function init(args)
   local size = tonumber(args[1] or 1073741824)
   local len = tonumber(args[2] or 65536)
   local seed = tonumber(args[3] or 42)
   local n = tonumber(args[4] or 16384)
   math.randomseed(seed + 7919 * (tid or 0))
   for k = 1, n do
      local off = math.random(0, size - len)
      pool[k] = wrk.format(nil, nil, { ["Range"] = "bytes=" .. off .. "-" .. (off + len - 1) })
   end
end

function request()
   i = i % #pool + 1
   return pool[i]
end

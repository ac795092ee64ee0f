-- Random single-range GETs: "Range: bytes=OFF-(OFF+LEN-1)" with OFF uniform in
-- [0, SIZE-LEN] (unaligned), over the URL given to wrk.
-- wrk ... -s ranged.lua URL -- SIZE [LEN] [SEED]
dofile("wrk_common.lua")

local size, len, seed = 1073741824, 65536, 42

function init(args)
   size = tonumber(args[1] or size)
   len = tonumber(args[2] or len)
   seed = tonumber(args[3] or seed)
   math.randomseed(seed + 7919 * (tid or 0))
end

function request()
   local off = math.random(0, size - len)
   return wrk.format(nil, nil, { ["Range"] = "bytes=" .. off .. "-" .. (off + len - 1) })
end

-- Plain GETs of the URL given to wrk (no request() hook: wrk's static fast path).
-- wrk ... -s get_small.lua URL
dofile("wrk_common.lua")

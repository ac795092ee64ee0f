-- put_small.lua (4 KiB PUTs to fresh keys /v1/blobs/PREFIX/THREAD-N, so every request creates a
-- key) that also counts every answer outside 200-299 and prints it in the BENCH line, like
-- s3_urls.lua. Used by cluster.py; two wrk processes at once need two PREFIXes.
-- wrk ... -s cluster_put.lua URL -- PREFIX [SIZE]
dofile("put_small.lua")   -- which loads wrk_common.lua
dofile("wrk_status.lua")

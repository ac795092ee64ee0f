#!/usr/bin/env python3
"""Touch N GiB of anonymous memory, then exit.

The VM hands memory that stays free for ~2 s back to the host, and the next touch of such
memory is ~10x slower. Run this right before a timed upload so the page cache the upload
needs is backed by the hypervisor again instead of being faulted in during the measurement.
"""
import mmap
import sys

def touch(gib: float) -> None:
    size = int(gib * (1 << 30))
    chunk = b"\x5a" * (64 << 20)
    m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    left = size
    while left > 0:  # bounded: size / 64 MiB iterations
        n = min(left, len(chunk))
        m.write(chunk[:n])
        left -= n
    m.close()

if __name__ == "__main__":
    touch(float(sys.argv[1]) if len(sys.argv) > 1 else 3.0)

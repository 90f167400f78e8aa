"""Five million live GC-tracked objects, then a few steps."""

import sys
import time

import memprobe

n = int(sys.argv[1]) if len(sys.argv) > 1 else 5_000_000
heap: list[list[object]] = [[] for _ in range(n)]
for _ in range(30):
    heap.append([])
    memprobe.step()
    time.sleep(0.02)
print(f"heap {len(heap)}", flush=True)

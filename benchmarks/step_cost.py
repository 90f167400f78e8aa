"""Time ``memprobe.step()`` per call; run plainly (a no-op) and under ``memprobe run``.

Prints one JSON line: ``min_ns`` (the fastest of ``--repeats`` timings of ``--calls``
calls: the step's own cost) and ``mean_ns`` (all repeats together: what the agent does at
steps on average, its samples every 0.1 s and budgeted censuses included). The first 100
steps are taken before timing (memprobe's fixed-step censuses at steps 5 and 25).
"""

import argparse
import json
import time

import memprobe

ap = argparse.ArgumentParser()
ap.add_argument("--calls", type=int, default=1_000_000)
ap.add_argument("--repeats", type=int, default=5)
args = ap.parse_args()

step = memprobe.step
for _ in range(100):
    step()
times = []
for _ in range(args.repeats):
    t0 = time.perf_counter()
    for _ in range(args.calls):
        step()
    times.append(time.perf_counter() - t0)
empty = []
for _ in range(args.repeats):  # the loop alone, to subtract
    t0 = time.perf_counter()
    for _ in range(args.calls):
        pass
    empty.append(time.perf_counter() - t0)
loop_ns = 1e9 * min(empty) / args.calls
print(
    json.dumps(
        {
            "calls": args.calls,
            "repeats": args.repeats,
            "min_ns": 1e9 * min(times) / args.calls - loop_ns,
            "mean_ns": 1e9 * sum(times) / (args.calls * args.repeats) - loop_ns,
            "loop_ns": loop_ns,
        }
    )
)

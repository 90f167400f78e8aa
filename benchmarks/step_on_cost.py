"""Cost of ``--step-on`` per call: time a tiny function plainly and as the run's step.

    python benchmarks/step_on_cost.py                       # plain: the function alone
    memprobe run --step-on benchmarks/step_on_cost.py:tick benchmarks/step_on_cost.py

Prints one JSON line: ``min_ns`` per call of ``tick()`` (the fastest of ``--repeats``
timings of ``--calls`` calls, the bare loop subtracted) and ``mean_ns`` (all repeats:
the agent's samples every 0.1 s and its budgeted censuses included). The difference
between the two runs is what --step-on costs per call: the hook (sys.monitoring on
3.12+, a wrapper before) plus the agent's step bookkeeping.
"""

import argparse
import json
import sys
import time


def tick() -> None:
    pass


ap = argparse.ArgumentParser()
ap.add_argument("--calls", type=int, default=1_000_000)
ap.add_argument("--repeats", type=int, default=5)
args = ap.parse_args()

call = tick  # looked up after the def: the wrapper where one replaced it
for _ in range(100):
    call()
times = []
for _ in range(args.repeats):
    t0 = time.perf_counter()
    for _ in range(args.calls):
        call()
    times.append(time.perf_counter() - t0)
empty = []
for _ in range(args.repeats):
    t0 = time.perf_counter()
    for _ in range(args.calls):
        pass
    empty.append(time.perf_counter() - t0)
loop_ns = 1e9 * min(empty) / args.calls
print(
    json.dumps(
        {
            "python": sys.version.split()[0],
            "calls": args.calls,
            "min_ns": round(1e9 * min(times) / args.calls - loop_ns, 1),
            "mean_ns": round(1e9 * sum(times) / (args.calls * args.repeats) - loop_ns, 1),
        }
    )
)

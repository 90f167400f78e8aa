"""About 10^5 steps per second with memprobe.step(); measures what the step marker costs.

    fault_fast_steps.py N

Alternates blocks of 5,000 steps that call ``memprobe.step()`` with blocks that call a
no-op function instead (same work otherwise), so both see the same machine load; prints
the fastest block of each kind, in microseconds per step, and how many steps were marked.
"""

import json
import sys
import time

import memprobe

n = int(sys.argv[1])
work = list(range(1500))  # ~8-10 µs of "training" per step: about 10^5 steps/s
BLOCK = 5000


def noop() -> None:
    pass


def block(mark) -> float:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    for _ in range(BLOCK):
        sum(work)
        mark()
    return (time.perf_counter() - t0) / BLOCK * 1e6


marked, probe, plain = 0, [], []
for _ in range(n // (2 * BLOCK)):
    probe.append(block(memprobe.step))
    marked += BLOCK
    plain.append(block(noop))
print(json.dumps({"marked": marked, "step_us": min(probe), "noop_us": min(plain)}))

"""A simulation without steps whose work runs inside a generator: ``for record in
simulate(cell)`` with each cycle computed in ``simulate``, so the main thread is inside a
generator's frame nearly all the time (resumed by the ``for`` loop, never by a call that
builds a tuple). Every cycle's trace is kept in a module-level list."""

import sys
import time
from typing import Dict, Iterator, List

TRACES: List[bytes] = []


def simulate(cell: int, cycles: int) -> Iterator[Dict[str, float]]:
    for cycle in range(cycles):
        acc = 0
        for k in range(3000):  # the cycle's work, inside the generator
            acc += (k * cell) % 7
        TRACES.append(bytes(4000))
        yield {"cell": cell, "cycle": cycle, "acc": float(acc)}


def main(seconds: float) -> None:
    end = time.monotonic() + seconds
    cell = n = 0
    while time.monotonic() < end:
        for record in simulate(cell, 50):
            n += int(record["cycle"] >= 0)
        cell += 1
    print(f"{n} cycles of {cell} cells, {len(TRACES)} traces")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 6.0)

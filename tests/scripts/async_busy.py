"""An asyncio service whose request coroutines compute without a pause (no await between
their steps of work) and keep every result in a set of the service: its event loop is
inside a coroutine nearly all the time, never a generator."""

from __future__ import annotations

import asyncio
import sys
import time


class Service:
    def __init__(self) -> None:
        self.results: set[tuple[int, str]] = set()

    async def handle(self, i: int) -> None:
        acc = 0
        for k in range(20_000):  # a request's CPU work, no await
            acc += k * i
        self.results.add((i, str(acc) * 20))
        await asyncio.sleep(0)


async def main(seconds: float) -> None:
    service = Service()
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        await asyncio.gather(*(service.handle(i + j) for j in range(8)))
        i += 8
    print(f"requests {i} kept {len(service.results)}")


asyncio.run(main(float(sys.argv[1]) if len(sys.argv) > 1 else 6.0))

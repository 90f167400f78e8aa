"""A thread builds tuples from generators non-stop while the main loop steps.

tuple(generator) resizes the tuple it is building, which CPython allows only while
nothing else references it; a census that holds every object while this thread runs
would make it raise SystemError (python/cpython#39117). ``async`` (second argument): each
thread runs an asyncio loop whose coroutines build them (a census is not put off for a
coroutine's frame alone, but for the generator's frame above it).
"""

import asyncio
import sys
import threading
import time

import memprobe

errors: list[str] = []
stop = threading.Event()


def build() -> None:
    while not stop.is_set():
        try:
            for n in (10, 100, 1000, 5000):
                tuple(i for i in range(n))
        except SystemError as e:  # the failure this script exists to catch
            errors.append(repr(e))
            return


async def build_async() -> None:
    while not stop.is_set():
        try:
            for n in (10, 100, 1000, 5000):
                tuple(i for i in range(n))
                await asyncio.sleep(0)
        except SystemError as e:
            errors.append(repr(e))
            return


def build_in_loop() -> None:
    asyncio.run(build_async())


target = build_in_loop if sys.argv[2:3] == ["async"] else build
threads = [threading.Thread(target=target) for _ in range(2)]
for t in threads:
    t.start()
keep = [[i] * 8 for i in range(60_000)]  # a heap worth a census of some length
end = time.monotonic() + float(sys.argv[1] if len(sys.argv) > 1 else 6)
steps = 0
while time.monotonic() < end:
    time.sleep(0.002)
    memprobe.step()
    steps += 1
stop.set()
for t in threads:
    t.join()
print(f"steps {steps} errors {errors}")
sys.exit(1 if errors else 0)

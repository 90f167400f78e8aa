"""A thread builds tuples from generators non-stop while the main loop steps.

tuple(generator) resizes the tuple it is building, which CPython allows only while
nothing else references it; a census that holds every object while this thread runs
would make it raise SystemError (python/cpython#39117).
"""

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


threads = [threading.Thread(target=build) for _ in range(2)]
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

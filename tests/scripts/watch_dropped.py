"""Watches a list and an object, drops both, then checks from inside that they were freed.

Prints ``freed list=True obj=True`` when memprobe kept neither alive.
"""

import gc
import sys
import time
import weakref

import memprobe


class Buffer:
    def __init__(self) -> None:
        self.items = [bytes(1000) for _ in range(100)]


class Probe(list[object]):  # a list subclass can be weakly referenced: tells when the list died
    pass


buf = memprobe.watch("buffer", Buffer())
lst: list[object] = memprobe.watch("scratch", [bytes(1000) for _ in range(100)])
buf_ref = weakref.ref(buf)
# a plain list cannot be weakly referenced: watch a finalizer-carrying item inside it
sentinel = Probe()
lst.append(sentinel)
sentinel_ref = weakref.ref(sentinel)
del sentinel
for _ in range(30):
    time.sleep(0.02)
    memprobe.step()
del buf, lst
deadline = time.monotonic() + 5
while time.monotonic() < deadline and (buf_ref() is not None or sentinel_ref() is not None):
    gc.collect()
    time.sleep(0.05)
    memprobe.step()
print(f"freed list={sentinel_ref() is None} obj={buf_ref() is None}", flush=True)
sys.exit(0)

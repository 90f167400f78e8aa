"""Forks without exec; parent and child both step for a while; the child's status decides."""

import os
import sys
import time

import memprobe


def loop(seconds: float, tag: str) -> None:
    kept = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        kept.append(bytearray(16 * 1024))
        memprobe.step()
        time.sleep(0.005)
    print(f"{tag} {os.getpid()} stepped {len(kept)}", flush=True)


loop(0.3, "parent-before")
pid = os.fork()
if pid == 0:
    loop(1.6, "child")
    os._exit(0)
loop(1.0, "parent-after")
_, status = os.waitpid(pid, 0)
sys.exit(0 if os.waitstatus_to_exitcode(status) == 0 else 1)

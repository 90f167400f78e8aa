"""Four threads call memprobe.step() as fast as they can: the agent's lines, written from all
of them and from its own thread, must never interleave or tear."""

import sys
import threading

import memprobe

kept: list[bytearray] = []


def worker(n: int) -> None:
    for _ in range(n):
        kept.append(bytearray(1000))
        memprobe.step()


n = int(sys.argv[1])
threads = [threading.Thread(target=worker, args=(n,)) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(len(kept))

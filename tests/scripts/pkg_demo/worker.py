"""Run with -m: grows a list, reports its __name__ and argv."""

import sys
import time

print("module", __name__, sys.argv[1:])
held = []
for _ in range(20):
    held.append(bytearray(200_000))
    time.sleep(0.02)
